"""A ledger message read as the entry every query shows: the chained record (`Chained`) with its chain index and the
stream sequence of its ledger message (a listing's cursor), and which listing it belongs to (`as_management`,
`as_tool_call`, `as_risk`, each None for an entry that is not of its kind). A message that is not a readable entry of
a known kind decodes to None, never to an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.message import DecodeError

from saip.audit import records
from saip.audit.chain import LedgerMessage, decode_entry
from saip.v1 import events_pb2


@dataclass(frozen=True, slots=True)
class Chained:
    """A record as chained: its index, its ledger message's stream sequence, and the masked record."""

    index: int
    seq: int
    hash: bytes
    chained_at: datetime
    record: events_pb2.AuditRecord


@dataclass(frozen=True, slots=True)
class RiskView:
    """A risk event (raised by a service, or derived from a management call) at its record's place in the chain."""

    index: int
    seq: int
    event: events_pb2.RiskEvent


def decode(message: LedgerMessage) -> Chained | None:
    """The chained record a ledger message holds, or None when it is not a readable entry."""
    entry = decode_entry(message.data)
    if entry is None:
        return None
    record = events_pb2.AuditRecord()
    try:
        record.ParseFromString(entry.record)
    except DecodeError:
        return None
    if records.kind_of(record) is None:
        return None
    return Chained(
        index=entry.index,
        seq=message.seq,
        hash=entry.hash,
        chained_at=entry.chained_at.ToDatetime(tzinfo=UTC),
        record=record,
    )


def as_management(entry: Chained) -> Chained | None:
    return entry if records.kind_of(entry.record) == "management" else None


def as_tool_call(entry: Chained) -> Chained | None:
    return entry if records.kind_of(entry.record) == "tool" else None


def as_risk(entry: Chained) -> RiskView | None:
    event = records.risk_event_of(entry.record)
    return RiskView(entry.index, entry.seq, event) if event is not None else None
