"""The JSON shapes of audit data, the same for the monitor tools (the AI) and the REST API (the person).

The views are declared parallel tables: one function per message, each a dict of the same shape."""

from __future__ import annotations

from typing import Any

from saip.common import callers, vocabulary
from saip.gateway.areas.words import when
from saip.v1 import audit_pb2, common_pb2, events_pb2

DECISIONS = vocabulary.DECISIONS


def outcome(value: common_pb2.Outcome) -> str:
    return vocabulary.OUTCOMES.get(value, vocabulary.UNSPECIFIED)


def outcome_value(name: str) -> common_pb2.Outcome:
    return next(value for value, word in vocabulary.OUTCOMES.items() if word == name)


def level(value: common_pb2.ApprovalLevel) -> str:
    return vocabulary.LEVELS.get(value, vocabulary.UNSPECIFIED)


def severity(value: common_pb2.Severity) -> str:
    return vocabulary.SEVERITIES.get(value, vocabulary.UNSPECIFIED)


def side(value: common_pb2.HitlSide) -> str:
    return vocabulary.SIDES.get(value, vocabulary.UNSPECIFIED)


def client(caller: common_pb2.Caller) -> str:
    return callers.client(caller, "unidentified")


def credential(caller: common_pb2.Caller) -> dict[str, str] | None:
    """The credential a call presented (none: /mcp asked for none, or the call came in-process)."""
    if not caller.HasField("credential") or not caller.credential.id:
        return None
    found = caller.credential
    return {"id": found.id, "kind": found.kind, "name": found.name}


def _call(entry: audit_pb2.ChainedRecord, call: events_pb2.ManagementCall | events_pb2.ToolCall) -> dict[str, Any]:
    """What every audited call shows first: where it is on the trail, when it came, from whom (the credential it
    presented, then the client as it names itself), for which tool."""
    return {
        "index": entry.index,
        "cursor": entry.seq,
        "time": when(call.time),
        "credential": credential(call.caller),
        "client": client(call.caller),
        "tool": call.tool,
    }


def management_call(entry: audit_pb2.ChainedRecord) -> dict[str, Any]:
    call = entry.record.management
    return {
        **_call(entry, call),
        "level": level(call.level),
        "outcome": outcome(call.outcome),
        "durationMs": call.duration_ms,
        "summary": call.summary,
        "arguments": call.arguments,
        "result": call.result,
        "highRisk": call.high_risk,
        "approval": DECISIONS.get(call.hitl),
        "approvalSeconds": round(call.approval_seconds, 3) if call.hitl else None,
    }


def tool_call(entry: audit_pb2.ChainedRecord) -> dict[str, Any]:
    call = entry.record.tool_call
    return {
        **_call(entry, call),
        "source": call.source,
        "outcome": outcome(call.outcome),
        "durationMs": call.duration_ms,
        "arguments": call.arguments,
        "result": call.result,
        "approval": DECISIONS.get(call.hitl),
        "proxied": {"server": call.proxied.server, "tool": call.proxied.tool} if call.HasField("proxied") else None,
    }


def risk_event(entry: audit_pb2.RiskEventEntry) -> dict[str, Any]:
    event = entry.event
    return {
        "index": entry.index,
        "cursor": entry.seq,
        "time": when(event.time),
        "type": event.type,
        "severity": severity(event.severity),
        "service": event.service,
        "subject": event.subject,
        "reason": event.reason or None,
        "summary": event.summary,
    }


def record(entry: audit_pb2.ChainedRecord) -> dict[str, Any]:
    """Any chained record, tagged with its kind (for `saip audit tail`)."""
    kind = entry.record.WhichOneof("record")
    if kind == "management":
        return {"kind": "management", **management_call(entry)}
    if kind == "tool_call":
        return {"kind": "tool", **tool_call(entry)}
    if kind == "risk":
        risk = audit_pb2.RiskEventEntry(index=entry.index, seq=entry.seq, event=entry.record.risk)
        return {"kind": "risk", **risk_event(risk)}
    return {"kind": "unknown", "index": entry.index, "cursor": entry.seq}


def page(entries: list[dict[str, Any]], next_cursor: int) -> dict[str, Any]:
    return {"entries": entries, "count": len(entries), "nextCursor": next_cursor or None}


def overview(reply: audit_pb2.GetOverviewResponse) -> dict[str, Any]:
    return {
        "window": reply.window,
        "capacity": reply.capacity,
        "managementOutcomes": {outcome(item.outcome): item.count for item in reply.management_outcomes},
        "riskEvents": {item.type: item.count for item in reply.risk_events},
        "chain": {
            "length": reply.chain_length,
            "headHash": reply.head_hash or None,
            "lastEntry": when(reply.last_entry_time),
        },
        "pendingRecords": reply.pending,
        "collectorSince": when(reply.collector_since),
    }


def hitl(reply: audit_pb2.GetHitlSummaryResponse) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for item in reply.counts:
        counts.setdefault(side(item.side), {})[DECISIONS.get(item.decision, "unknown")] = item.count
    return {
        "since": when(reply.collector_since),
        "questions": reply.questions,
        "approvalRate": round(reply.approval_rate, 4),
        "decisions": counts,
        "recent": [management_call(entry) for entry in reply.recent if entry.record.HasField("management")],
    }


def verify(reply: audit_pb2.VerifyChainResponse) -> dict[str, Any]:
    broken = None
    if reply.HasField("broken"):
        broken = {"index": reply.broken.index, "cursor": reply.broken.seq, "reason": reply.broken.reason}
    return {
        "ok": reply.ok,
        "checked": reply.checked,
        "firstIndex": reply.first_index,
        "lastIndex": reply.last_index,
        "broken": broken,
    }


def trace_summary(summary: audit_pb2.TraceSummary) -> dict[str, Any]:
    return {
        "traceId": summary.trace_id,
        "name": summary.name,
        "tool": summary.tool or None,
        "outcome": summary.outcome or None,
        "start": when(summary.start_time),
        "durationMs": round(summary.duration_ms, 3),
        "spanCount": summary.span_count,
        "services": list(summary.services),
        "error": summary.error,
        "complete": summary.complete,
    }


def _span(span: audit_pb2.TraceSpan) -> dict[str, Any]:
    return {
        "spanId": span.span_id,
        "name": span.name,
        "service": span.service,
        "kind": span.kind,
        "startOffsetMs": round(span.start_offset_ms, 3),
        "durationMs": round(span.duration_ms, 3),
        "error": span.error,
        "status": span.status_message or None,
        "attributes": dict(sorted(span.attributes.items())),
        "children": [],
    }


def trace(reply: audit_pb2.GetTraceResponse) -> dict[str, Any]:
    """The trace's summary and its spans as a tree (`spans`: the roots, each with its `children`), from the depth-first
    list the audit service sends."""
    roots: list[dict[str, Any]] = []
    path: list[dict[str, Any]] = []  # the current span's ancestors, by depth
    for span in reply.spans:
        shown = _span(span)
        del path[span.depth :]
        (path[-1]["children"] if path else roots).append(shown)
        path.append(shown)
    return {**trace_summary(reply.trace), "spans": roots, "droppedSpans": reply.dropped_spans}
