"""Records and an in-memory ledger for the audit unit tests."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from saip.audit import chain, records
from saip.audit.chain import GENESIS, ChainHead, LedgerMessage
from saip.audit.ports import Window
from saip.v1 import common_pb2, events_pb2

CHAINED_AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def claude() -> common_pb2.Caller:
    return common_pb2.Caller(client_name="claude-code", client_version="2.1.314", elicitation=True)


def _stamp(time: Timestamp, at: datetime | None) -> None:
    """The record's own time: `at`, or now when None (records a live publisher would send)."""
    if at is None:
        time.GetCurrentTime()
    else:
        time.FromDatetime(at)


def management_call(
    record_id: str = "m-1",
    *,
    at: datetime | None = CHAINED_AT,
    tool: str = "saip_tools_publish",
    level: common_pb2.ApprovalLevel = common_pb2.APPROVAL_LEVEL_DESTRUCTIVE,
    outcome: common_pb2.Outcome = common_pb2.OUTCOME_OK,
    summary: str = "Publish 'cafe-desk'",
    hitl: common_pb2.HitlDecision = common_pb2.HITL_DECISION_UNSPECIFIED,
    duration_ms: int = 12,
) -> events_pb2.AuditRecord:
    call = events_pb2.ManagementCall(
        id=record_id,
        gateway="gw-1",
        caller=claude(),
        tool=tool,
        category="tools",
        level=level,
        outcome=outcome,
        duration_ms=duration_ms,
        summary=summary,
        hitl=hitl,
    )
    _stamp(call.time, at)
    return records.wrap(call)


def tool_call(
    record_id: str = "t-1",
    *,
    at: datetime | None = CHAINED_AT,
    tool: str = "wiki_outline",
    outcome: common_pb2.Outcome = common_pb2.OUTCOME_OK,
    hitl: common_pb2.HitlDecision = common_pb2.HITL_DECISION_UNSPECIFIED,
    side: common_pb2.HitlSide = common_pb2.HITL_SIDE_UNSPECIFIED,
    source: str = "exposed",
) -> events_pb2.AuditRecord:
    call = events_pb2.ToolCall(
        id=record_id,
        caller=claude(),
        tool=tool,
        source=source,
        outcome=outcome,
        duration_ms=40,
        hitl=hitl,
        side=side,
    )
    _stamp(call.time, at)
    return records.wrap(call)


def risk_event(
    record_id: str = "r-1",
    *,
    at: datetime | None = CHAINED_AT,
    risk_type: str = "sandbox-guard-blocked",
    severity: common_pb2.Severity = common_pb2.SEVERITY_WARN,
    reason: str = "network",
    summary: str = "wiki_outline tried to open a socket",
) -> events_pb2.AuditRecord:
    event = events_pb2.RiskEvent(
        id=record_id,
        service="tools",
        type=risk_type,
        severity=severity,
        summary=summary,
        reason=reason,
        subject="wiki_outline",
    )
    _stamp(event.time, at)
    return records.wrap(event)


def chain_of(record_list: list[events_pb2.AuditRecord], head: ChainHead = GENESIS) -> list[events_pb2.LedgerEntry]:
    """Ledger entries chaining the records after `head`, as a collector would."""
    entries = []
    for record in record_list:
        entry = chain.link(head, record.SerializeToString(deterministic=True), records.record_id(record), CHAINED_AT)
        entries.append(entry)
        head = chain.head_of(entry, seq=0)
    return entries


class MemoryLedger:
    """A stream of ledger messages held in a list (the LedgerHistory the views read), for unit tests.

    Ledger messages sit at even stream sequences, as they do in SAIP_AUDIT where each follows its record.
    """

    def __init__(self, entries: Sequence[events_pb2.LedgerEntry] = ()) -> None:
        self.messages = [LedgerMessage(seq=2 * (n + 1), data=e.SerializeToString()) for n, e in enumerate(entries)]
        self.first_seq = 1
        self.reads = 0

    @property
    def last_seq(self) -> int:
        return self.messages[-1].seq if self.messages else 0

    async def windows_back(self, before_seq: int, budget: int) -> AsyncGenerator[Window, None]:
        end, size, covered = before_seq - 1, 4, 0
        while end >= self.first_seq and covered < budget:
            start = max(self.first_seq, end - size + 1, end - (budget - covered) + 1)
            self.reads += 1
            yield Window(start, [m for m in self.messages if start <= m.seq <= end], at_start=start <= self.first_seq)
            covered += end - start + 1
            end = start - 1
            size *= 2

    async def follow(self, from_seq: int) -> AsyncGenerator[LedgerMessage, None]:
        for message in self.messages:
            if message.seq >= from_seq:
                yield message
