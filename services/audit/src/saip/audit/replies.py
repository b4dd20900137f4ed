"""The audit service's replies as messages: its views' entries and its traces as saip.v1's, the filters of the
listings' requests (a management call's `CallFilter`), one entry by its cursor and the entries of a range off the
ledger, and how long the recent questions took to be answered."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import aclosing
from datetime import datetime
from typing import Protocol

from saip.audit import traces, views
from saip.audit.entries import Chained, RiskView, decode
from saip.audit.ports import LedgerRange
from saip.common import names
from saip.v1 import audit_pb2, common_pb2, events_pb2

# The decisions someone gave (an answer): a timeout, a failure to ask or a denial is nobody's answer.
ANSWERED = frozenset({common_pb2.HITL_DECISION_APPROVED, common_pb2.HITL_DECISION_DECLINED})


class Paged(Protocol):
    """A listing's request: how many entries a page holds, and the cursor of the page before it."""

    limit: int
    before_seq: int


def chained(entry: Chained) -> audit_pb2.ChainedRecord:
    return audit_pb2.ChainedRecord(index=entry.index, seq=entry.seq, record=entry.record)


def risk(entry: RiskView) -> audit_pb2.RiskEventEntry:
    return audit_pb2.RiskEventEntry(index=entry.index, seq=entry.seq, event=entry.event)


def keeps(wanted: audit_pb2.CallFilter) -> Callable[[events_pb2.ManagementCall], bool]:
    """Whether a management call is one `wanted` keeps: every field set matches (`CallFilter`)."""
    since = wanted.since.ToNanoseconds() if wanted.HasField("since") else None
    until = wanted.until.ToNanoseconds() if wanted.HasField("until") else None

    def kept(call: events_pb2.ManagementCall) -> bool:
        caller = call.caller
        if wanted.tool and call.tool != wanted.tool:
            return False
        if wanted.client and wanted.client not in (caller.client_name, _label(caller)):
            return False
        if wanted.level not in (common_pb2.APPROVAL_LEVEL_UNSPECIFIED, call.level):
            return False
        if wanted.outcome not in (common_pb2.OUTCOME_UNSPECIFIED, call.outcome):
            return False
        if wanted.operator and wanted.operator != (caller.operator or names.AI):
            return False
        if wanted.interface and wanted.interface != (caller.interface or names.MCP):
            return False
        arrived = call.time.ToNanoseconds()
        return (since is None or arrived >= since) and (until is None or arrived < until)

    return kept


def management_calls(request: audit_pb2.ListManagementCallsRequest) -> Callable[[Chained], bool]:
    """The management calls a listing's filter keeps."""
    kept = keeps(request.filter)
    return lambda entry: kept(entry.record.management)


def tool_calls(request: audit_pb2.ListToolCallsRequest) -> Callable[[Chained], bool]:
    """Tool calls of the requested tool and source (either any when empty)."""

    def matches(entry: Chained) -> bool:
        call = entry.record.tool_call
        return (not request.tool or call.tool == request.tool) and (not request.source or call.source == request.source)

    return matches


def risk_events(request: audit_pb2.ListRiskEventsRequest) -> Callable[[RiskView], bool]:
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


def answer_times(decided: Iterable[Chained]) -> audit_pb2.AnswerTimes:
    """How long the questions someone answered took, over the recent decided calls."""
    calls = (
        entry.record.management if entry.record.HasField("management") else entry.record.tool_call for entry in decided
    )
    waits = sorted(call.approval_seconds for call in calls if call.hitl in ANSWERED)
    if not waits:
        return audit_pb2.AnswerTimes()
    p90 = statistics.quantiles(waits, n=10, method="inclusive")[-1] if len(waits) > 1 else waits[0]
    return audit_pb2.AnswerTimes(
        answered=len(waits), p50_seconds=statistics.median(waits), p90_seconds=p90, max_seconds=waits[-1]
    )


async def entry(audit_views: views.AuditViews, ledger: LedgerRange, seq: int) -> Chained | None:
    """The entry whose ledger message has this cursor: from the recent ring when it holds it, else the stream."""
    for item in audit_views.recent.newest_first():
        if item.seq <= seq:
            if item.seq == seq:
                return item
            break
    async with aclosing(ledger.read(seq, seq)) as messages:
        async for message in messages:
            return decode(message) if message.seq == seq else None
    return None


async def entries(ledger: LedgerRange, since: datetime | None) -> AsyncIterator[Chained]:
    """Every readable entry of the retained ledger, oldest first, from the first one chained at `since` or later (a
    call is chained after it arrived, so none that arrived since is before it), to the last one there is now."""
    first, last = await ledger.bounds()
    if last == 0:
        return
    async with aclosing(ledger.read(first, last, since)) as messages:
        async for message in messages:
            found = decode(message)
            if found is not None:
                yield found


def _label(caller: common_pb2.Caller) -> str:
    return " ".join(part for part in (caller.client_name, caller.client_version) if part)
