"""What the audit service's rules need from outside, as protocols, and the values they exchange. The published records
come from a `RecordSource` of `Delivery`s (`clients.consumer.JetStreamRecords`); the chain is stored in a `Ledger`
(its head, appends that cannot fork it), read back in `Window`s and followed (`LedgerHistory`) and read by range
(`LedgerRange`), all three `clients.ledger.JetStreamLedger`; the collector tells the views of each entry it appends
as a `Linked`. tests/unit/audit/fakes.py and samples.py hold in-memory ones."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from saip.audit.chain import ChainHead, LedgerMessage
from saip.v1 import events_pb2


class Delivery(Protocol):
    """One delivery of a published record; it is redelivered until acknowledged or rejected."""

    @property
    def data(self) -> bytes: ...

    @property
    def subject(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The message's headers: the publisher's `traceparent`, when the call was traced."""
        ...

    async def ack(self) -> None: ...

    async def reject(self) -> None:
        """Never deliver this one again (it cannot be chained)."""
        ...


class RecordSource(Protocol):
    """The published records, in stream order."""

    async def batch(self, limit: int) -> Sequence[Delivery]:
        """The next records, at most `limit`: those that have arrived, or none when none arrived within the
        source's wait."""
        ...


@dataclass(frozen=True, slots=True)
class Appended:
    seq: int  # stream sequence of the ledger message
    duplicate: bool  # the store already held an append of this record


@dataclass(frozen=True, slots=True)
class Linked:
    """An entry the collector appended, with what it already holds decoded: the masked record and when it was
    chained."""

    seq: int  # stream sequence of the ledger message
    after_seq: int  # the ledger message right before it: the last sequence its append expected
    entry: events_pb2.LedgerEntry
    record: events_pb2.AuditRecord
    chained_at: datetime


class Ledger(Protocol):
    """The chain as stored: its head, appends that cannot fork it, and what was chained after a given point."""

    async def head(self) -> ChainHead: ...

    async def append(self, entry: events_pb2.LedgerEntry, expected_seq: int) -> Appended:
        """Append unless the ledger's last message is no longer `expected_seq`.

        Raises:
            ChainMoved: another writer appended after `expected_seq`.
        """
        ...

    async def append_batch(self, entries: Sequence[events_pb2.LedgerEntry], expected_seq: int) -> int:
        """Append the entries all together, or none of them, unless the ledger's last message is no longer
        `expected_seq`; returns the stream sequence of the last (the others precede it, one apart).

        Raises:
            ChainMoved: another writer appended after `expected_seq`.
            BatchRefused: the store took none of them for another reason (a record it holds already).
        """
        ...

    async def chained_since(self, seq: int) -> list[str]:
        """The record ids of the entries appended after stream sequence `seq` (the most recent ones, when that
        is very many)."""
        ...


@dataclass(frozen=True, slots=True)
class Window:
    """Ledger messages of one stretch of the stream, oldest first; `start_seq` is the lowest sequence it covered."""

    start_seq: int
    messages: list[LedgerMessage]
    at_start: bool  # the stretch reached the oldest retained message


class LedgerHistory(Protocol):
    """The ledger read backwards from a point, and followed from a point on."""

    def windows_back(self, before_seq: int, budget: int) -> AsyncGenerator[Window, None]:
        """Stretches below `before_seq`, newest first, until the stream's start or `budget` sequences."""
        ...

    def follow(self, from_seq: int) -> AsyncGenerator[LedgerMessage, None]:
        """Every ledger message from `from_seq` on, as it is appended, until closed."""
        ...


class LedgerRange(Protocol):
    """The retained ledger read by stream sequence: its bounds, and the messages of a range."""

    async def bounds(self) -> tuple[int, int]: ...

    def read(
        self, start_seq: int, end_seq: int, since: datetime | None = None
    ) -> AsyncGenerator[LedgerMessage, None]: ...
