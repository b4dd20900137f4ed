"""The JSON shapes of audit data, the same for the monitor tools (the AI) and the REST API (the person).

The views are declared parallel tables: one function per message, each a dict of the same shape."""

from __future__ import annotations

from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from saip.common import callers, names, words
from saip.common.words import when
from saip.v1 import audit_pb2, common_pb2, events_pb2

DECISIONS = words.DECISIONS


def outcome(value: common_pb2.Outcome) -> str:
    return words.OUTCOMES.get(value, words.UNSPECIFIED)


def outcome_value(name: str) -> common_pb2.Outcome:
    return next(value for value, word in words.OUTCOMES.items() if word == name)


def level(value: common_pb2.ApprovalLevel) -> str:
    return words.LEVELS.get(value, words.UNSPECIFIED)


def severity(value: common_pb2.Severity) -> str:
    return words.SEVERITIES.get(value, words.UNSPECIFIED)


def side(value: common_pb2.HitlSide) -> str:
    return words.SIDES.get(value, words.UNSPECIFIED)


def client(caller: common_pb2.Caller) -> str:
    return callers.client(caller, "unidentified")


def credential(caller: common_pb2.Caller) -> dict[str, str] | None:
    """The credential a call presented (none: /mcp asked for none, or the call came in-process)."""
    if not caller.HasField("credential") or not caller.credential.id:
        return None
    found = caller.credential
    return {"id": found.id, "kind": found.kind, "name": found.name}


def operator(caller: common_pb2.Caller) -> str:
    """Who made the call: the AI, or the person (a record from before the trail said so is the AI's)."""
    return caller.operator or names.AI


def interface(caller: common_pb2.Caller) -> str:
    """Which interface the call came through: mcp, rest, cli, console (mcp for a record from before)."""
    return caller.interface or names.MCP


def _call(entry: audit_pb2.ChainedRecord, call: events_pb2.ManagementCall | events_pb2.ToolCall) -> dict[str, Any]:
    """What every audited call shows first: where it is on the trail, when it came, from whom (the credential it
    presented, then the client as it names itself; the AI's client, or the person) and through which interface, for
    which tool."""
    return {
        "index": entry.index,
        "cursor": entry.seq,
        "time": when(call.time),
        "credential": credential(call.caller),
        "client": client(call.caller),
        "operator": operator(call.caller),
        "interface": interface(call.caller),
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
        "answeredVia": call.answered_via or None,
        "traceId": call.trace_id or None,
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
        "traceId": call.trace_id or None,
    }


def decision(entry: audit_pb2.ChainedRecord) -> dict[str, Any]:
    """A call that needed a decision, as the inbox's recent answers show it: who answered (the person at the client,
    the client itself, or the person out of band through their interface), what, when, and how long it took."""
    call = entry.record.management if entry.record.HasField("management") else entry.record.tool_call
    asked = call.time.seconds + call.time.nanos / 1e9
    answered = Timestamp()
    answered.FromNanoseconds(int((asked + call.approval_seconds) * 1e9))
    return {
        **_call(entry, call),
        "kind": "management" if entry.record.HasField("management") else "tool",
        "decision": DECISIONS.get(call.hitl),
        "answeredVia": call.answered_via or None,
        "answeredAt": when(answered) if call.answered_via else None,
        "secondsToAnswer": round(call.approval_seconds, 3),
        "outcome": outcome(call.outcome),
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
        "answerTimes": {
            "answered": reply.answer_times.answered,
            "p50Seconds": round(reply.answer_times.p50_seconds, 3),
            "p90Seconds": round(reply.answer_times.p90_seconds, 3),
            "maxSeconds": round(reply.answer_times.max_seconds, 3),
        },
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
