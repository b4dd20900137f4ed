"""The query side: bounded rings of the recent chained records (management calls, tool calls, risk events, every
entry, the calls that needed a decision), rebuilt from the ledger's tail at start and kept current by following it,
and the tails of the clients that follow them.

Every ledger message is applied once, in stream order: a follower that resumes after an outage starts after the last
message applied, and an entry this service's collector appended is taken as the collector built it (when the stored
message is that entry byte for byte) rather than decoded again. The rings hold the newest entries only; an older page
is read from the stream (`paging`).
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from datetime import UTC
from itertools import islice

from saip.audit import records
from saip.audit.chain import LedgerMessage
from saip.audit.collector import BATCH
from saip.audit.entries import Chained, RiskView, as_management, as_risk, as_tool_call, decode
from saip.audit.paging import MAX_PAGE, Ring
from saip.audit.ports import LedgerHistory, Linked
from saip.audit.tail import TAIL_BUFFER, Tail
from saip.v1 import common_pb2

logger = logging.getLogger(__name__)

# Entries appended by this service's collector held for the follower to bring back (older ones are decoded instead).
EXPECTED = 4 * BATCH


class AuditViews:
    """The rings every query reads: management calls, tool calls, risk events and all recent entries."""

    def __init__(self, capacity: int, on_entry: Callable[[Chained], None] | None = None) -> None:
        self.capacity = capacity
        self._on_entry = on_entry
        self.management: Ring[Chained] = Ring(capacity, as_management)
        self.tools: Ring[Chained] = Ring(capacity, as_tool_call)
        self.risks: Ring[RiskView] = Ring(capacity, as_risk)
        # Serves TailEntries' backlog, which may ask for up to a full page whatever the capacity.
        self.recent: Ring[Chained] = Ring(max(capacity, MAX_PAGE), _every)
        # The newest calls that needed a decision, a page's worth: every READ call asks the HITL summary for them, so
        # they are kept apart rather than searched for among all recent entries.
        self.decisions: Ring[Chained] = Ring(MAX_PAGE, _decided)
        self.last: Chained | None = None
        self.last_seq = 0  # the last ledger message applied, readable or not
        self._tails: set[Tail] = set()
        self._expected: deque[tuple[int, bytes, Chained]] = deque()  # by stream sequence, oldest first

    def appended(self, appended: Sequence[Linked]) -> None:
        """Entries this service's collector has just appended, decoded already. One appended right behind the last
        ledger message the views hold is applied now, and the follower passes its message by on its sequence alone.
        One behind a message the follower has not brought yet (another collector's) waits for its own message: the
        entry is then taken as built when the message is the same byte for byte, and the message decoded otherwise.
        Entries the views are past are ignored, and only the newest `EXPECTED` wait.
        """
        expected = self._expected
        for linked in appended:
            if linked.seq <= self.last_seq or (expected and linked.seq <= expected[-1][0]):
                continue
            entry = linked.entry
            chained = Chained(entry.index, linked.seq, entry.hash, linked.chained_at.astimezone(UTC), linked.record)
            if linked.after_seq == self.last_seq and not expected:
                # Nothing can sit between: the append expected that message as the ledger's last.
                self.last_seq = linked.seq
                self._taken(chained)
            else:
                expected.append((linked.seq, entry.SerializeToString(deterministic=True), chained))
        while len(expected) > EXPECTED:
            expected.popleft()

    def _was_expected(self, message: LedgerMessage) -> Chained | None:
        expected = self._expected
        while expected and expected[0][0] < message.seq:
            expected.popleft()
        if expected and expected[0][0] == message.seq:
            _, data, chained = expected.popleft()
            if data == message.data:
                return chained
        return None

    def apply(self, message: LedgerMessage) -> Chained | None:
        """Take the next ledger message into the views (a message already applied is ignored)."""
        if message.seq <= self.last_seq:
            return None
        self.last_seq = message.seq
        entry = self._was_expected(message) or decode(message)
        if entry is None:
            logger.warning("ledger message is not a chain entry; left out of the views", extra={"seq": message.seq})
            return None
        self._taken(entry)
        return entry

    def _taken(self, entry: Chained) -> None:
        self._add(entry)
        for tail in self._tails:
            tail.push(entry)

    def _add(self, entry: Chained) -> None:
        for ring in (*self._listed(), self.decisions):
            ring.offer(entry)
        self.last = entry
        if self._on_entry is not None:
            self._on_entry(entry)

    def _listed(self) -> tuple[Ring[Chained] | Ring[RiskView], ...]:
        """The rings a listing pages through (below them, the ledger): what a rebuild fills."""
        return self.management, self.tools, self.risks, self.recent

    async def rebuild(self, history: LedgerHistory, last_seq: int, budget: int | None = None) -> int:
        """Fill the rings from the ledger's newest entries up to `last_seq`, reading backwards in windows until
        every ring is full, the stream's start is reached, or `budget` sequences were read (8x the capacity by
        default, so a large stream is never replayed whole). Returns how many entries were taken.
        """
        budget = budget if budget is not None else 8 * max(self.capacity, MAX_PAGE)
        rings = self._listed()
        wanted = [ring.capacity for ring in rings]
        newest_first: list[Chained] = []
        low, at_start = last_seq + 1, True
        async with aclosing(history.windows_back(last_seq + 1, budget)) as windows:
            async for window in windows:
                low, at_start = window.start_seq, window.at_start
                for message in reversed(window.messages):
                    entry = decode(message)
                    if entry is None:
                        continue
                    newest_first.append(entry)
                    for at, ring in enumerate(rings):
                        wanted[at] -= ring.view(entry) is not None
                if all(count <= 0 for count in wanted):
                    at_start = False
                    break
        for ring in rings:
            ring.horizon = 0 if at_start else low
        for entry in reversed(newest_first):
            self._add(entry)
        self.last_seq = max(self.last_seq, last_seq)
        return len(newest_first)

    async def keep_current(self, history: LedgerHistory) -> None:
        """Apply every ledger message appended after the last one applied, for as long as the ledger's follower
        runs. Kept alive by the service (`saip.common.watch.keep_alive`): each run resumes after the last message
        applied, so after a NATS outage nothing is skipped or applied twice.
        """
        async with aclosing(history.follow(self.last_seq + 1)) as messages:
            async for message in messages:
                self.apply(message)

    @contextmanager
    def tail(self, backlog: int, buffer: int = TAIL_BUFFER) -> Iterator[tuple[list[Chained], Tail]]:
        """The last `backlog` entries (oldest first) and a queue of every entry applied from now on, which
        gives up once `buffer` entries wait unread.
        """
        entries = list(islice(self.recent.newest_first(), backlog))
        entries.reverse()
        tail = Tail(buffer)
        self._tails.add(tail)
        try:
            yield entries, tail
        finally:
            self._tails.discard(tail)

    def close_tails(self) -> None:
        for tail in self._tails:
            tail.close()

    def outcome_counts(self) -> Counter[common_pb2.Outcome]:
        return Counter(call.record.management.outcome for call in self.management.newest_first())

    def risk_type_counts(self) -> Counter[str]:
        return Counter(risk.event.type for risk in self.risks.newest_first())

    def recent_decisions(self, limit: int) -> list[Chained]:
        """The newest calls (management and tool) that needed an approval decision, newest first."""
        return list(islice(self.decisions.newest_first(), limit))


def _every(entry: Chained) -> Chained:
    return entry


def _decided(entry: Chained) -> Chained | None:
    """A call that needed an approval decision."""
    return entry if records.needed_decision(entry.record) else None
