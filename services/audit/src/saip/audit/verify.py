"""The verify walk: retained ledger messages in stream order in, the first broken link out.

Entries older than the stream's age and size limits are gone, so the oldest retained entry's prev_hash is
the trusted anchor; every later entry must continue its index by one and link to its predecessor's hash,
and every entry's hash must be SHA-256(prev_hash || record).
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass

from saip.audit.chain import GENESIS_HASH, LedgerMessage, decode_entry, entry_hash
from saip.v1 import events_pb2


@dataclass(frozen=True, slots=True)
class BrokenLink:
    index: int
    seq: int
    reason: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """`checked` counts the entries examined, the broken one included; first/last are retained indexes."""

    ok: bool
    checked: int
    first_index: int
    last_index: int
    broken: BrokenLink | None


class ChainWalk:
    """Checks ledger messages one by one, in stream order, and remembers the first broken link."""

    def __init__(self) -> None:
        self._prev: events_pb2.LedgerEntry | None = None
        self.checked = 0
        self.first_index = 0
        self.last_index = 0
        self.broken: BrokenLink | None = None

    def check(self, message: LedgerMessage) -> bool:
        """Examine the next message; False once a link is broken (later messages are not examined)."""
        if self.broken is not None:
            return False
        self.checked += 1
        expected = self._prev.index + 1 if self._prev is not None else 0
        entry = decode_entry(message.data)
        if entry is None:
            self.broken = BrokenLink(expected, message.seq, "not a ledger entry")
            return False
        reason = self._problem(entry, expected)
        if reason is not None:
            self.broken = BrokenLink(entry.index, message.seq, reason)
            return False
        if self._prev is None:
            self.first_index = entry.index
        self.last_index = entry.index
        self._prev = entry
        return True

    def _problem(self, entry: events_pb2.LedgerEntry, expected: int) -> str | None:
        prev = self._prev
        if prev is not None and entry.index != expected:
            return f"index gap: expected {expected}, found {entry.index}"
        if prev is not None and entry.prev_hash != prev.hash:
            return f"prev_hash does not match entry {prev.index}"
        if prev is None and entry.index == 1 and entry.prev_hash != GENESIS_HASH:
            return "the first entry does not start from the genesis hash"
        if entry.hash != entry_hash(entry.prev_hash, entry.record):
            return "hash mismatch"
        return None

    def report(self) -> VerifyReport:
        return VerifyReport(
            ok=self.broken is None,
            checked=self.checked,
            first_index=self.first_index,
            last_index=self.last_index,
            broken=self.broken,
        )


async def verify(messages: AsyncIterable[LedgerMessage]) -> VerifyReport:
    """Walk `messages` (every retained ledger message, oldest first) and stop at the first broken link."""
    walk = ChainWalk()
    async for message in messages:
        if not walk.check(message):
            break
    return walk.report()
