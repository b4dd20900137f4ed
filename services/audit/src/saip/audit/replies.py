"""The audit service's replies as messages: its views' entries and its traces as saip.v1's, and the filters of the
listings' requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from saip.audit import traces, views
from saip.v1 import audit_pb2, common_pb2


class Paged(Protocol):
    """A listing's request: how many entries a page holds, and the cursor of the page before it."""

    limit: int
    before_seq: int


def chained(entry: views.Chained) -> audit_pb2.ChainedRecord:
    return audit_pb2.ChainedRecord(index=entry.index, seq=entry.seq, record=entry.record)


def risk(entry: views.RiskView) -> audit_pb2.RiskEventEntry:
    return audit_pb2.RiskEventEntry(index=entry.index, seq=entry.seq, event=entry.event)


def management_calls(request: audit_pb2.ListManagementCallsRequest) -> Callable[[views.Chained], bool]:
    """Management calls of the requested tool (any when empty) with the requested outcome (any when unspecified)."""

    def matches(entry: views.Chained) -> bool:
        call = entry.record.management
        tool_ok = not request.tool or call.tool == request.tool
        return tool_ok and request.outcome in (common_pb2.OUTCOME_UNSPECIFIED, call.outcome)

    return matches


def tool_calls(request: audit_pb2.ListToolCallsRequest) -> Callable[[views.Chained], bool]:
    """Tool calls of the requested tool and source (either any when empty)."""

    def matches(entry: views.Chained) -> bool:
        call = entry.record.tool_call
        return (not request.tool or call.tool == request.tool) and (not request.source or call.source == request.source)

    return matches


def risk_events(request: audit_pb2.ListRiskEventsRequest) -> Callable[[views.RiskView], bool]:
    return lambda entry: not request.type or entry.event.type == request.type


def summary(trace: traces.Trace) -> audit_pb2.TraceSummary:
    summary = audit_pb2.TraceSummary(
        trace_id=trace.trace_id,
        name=trace.root.name,
        tool=trace.tool,
        outcome=trace.outcome,
        duration_ms=trace.duration_ms,
        span_count=len(trace.spans),
        services=trace.services,
        error=trace.error,
        complete=trace.complete,
    )
    summary.start_time.FromNanoseconds(trace.start_ns)
    return summary


def trace_span(span: traces.Span, depth: int, trace_start_ns: int) -> audit_pb2.TraceSpan:
    return audit_pb2.TraceSpan(
        span_id=span.span_id,
        parent_span_id=span.parent_id,
        name=span.name,
        service=span.service,
        kind=span.kind,
        start_offset_ms=(span.start_ns - trace_start_ns) / 1e6,
        duration_ms=span.duration_ms,
        error=span.error,
        status_message=span.status_message,
        attributes=span.attributes,
        depth=depth,
    )
