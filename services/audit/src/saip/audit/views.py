"""The query side: bounded rings of recent chained records, rebuilt from the ledger's tail and kept current
by following it, plus paging that falls back to the stream for entries older than the rings hold.

Every view entry carries its chain index and the stream sequence of its ledger message; the sequence is the
paging cursor. A ring's `horizon` is the lowest sequence from which it holds every entry of its kind, so a
page below the horizon is read from the stream instead (0: the ring holds the whole history).
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import Generic, Protocol, TypeVar

import anyio
from google.protobuf.message import DecodeError

from saip.audit import records
from saip.audit.chain import LedgerMessage, decode_entry
from saip.audit.collector import BATCH, Linked
from saip.audit.errors import InvalidRequest, StoreUnavailable, TailTooSlow
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

MAX_PAGE = 500
# Stream sequences one query may scan below a ring before it returns a partial page with a cursor.
SCAN_BUDGET = 20_000
# How many new entries a TailEntries client may lag behind before it is cut off.
TAIL_BUFFER = 2_000
# Entries appended by this service's collector held for the follower to bring back (older ones are decoded instead).
EXPECTED = 4 * BATCH


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


class _HasSeq(Protocol):
    @property
    def seq(self) -> int: ...


T = TypeVar("T", bound=_HasSeq)


class Ring(Generic[T]):
    """The newest `capacity` items, oldest evicted first; the horizon rises past every evicted item."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.horizon = 0
        self._items: deque[T] = deque()

    def add(self, item: T) -> None:
        if len(self._items) >= self.capacity:
            evicted = self._items.popleft()
            self.horizon = max(self.horizon, evicted.seq + 1)
        self._items.append(item)

    def newest_first(self) -> Iterator[T]:
        return reversed(self._items)

    @property
    def full(self) -> bool:
        return len(self._items) >= self.capacity

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, slots=True)
class Window:
    """Ledger messages of one stretch of the stream, oldest first; `start_seq` is the lowest sequence it covered."""

    start_seq: int
    messages: list[LedgerMessage]
    at_start: bool  # the stretch reached the oldest retained message


class LedgerHistory(Protocol):
    def windows_back(self, before_seq: int, budget: int) -> AsyncGenerator[Window, None]:
        """Stretches below `before_seq`, newest first, until the stream's start or `budget` sequences."""
        ...

    def follow(self, from_seq: int) -> AsyncGenerator[LedgerMessage, None]:
        """Every ledger message from `from_seq` on, as it is appended, until closed."""
        ...


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_before_seq: int  # 0 when there is nothing older


def page_size(value: int, *, name: str = "limit", default: int = 20, maximum: int = MAX_PAGE) -> int:
    """A requested page size: 0 means the default; above the maximum is refused, naming the allowed range.

    Raises:
        InvalidRequest: the value is above `maximum`.
    """
    if value == 0:
        return default
    if not 1 <= value <= maximum:
        raise InvalidRequest(f"{name} must be between 1 and {maximum} (0 means {default}), got {value}")
    return value


class Tail:
    """One TailEntries client's queue of new entries, cut off when it falls `limit` entries behind."""

    def __init__(self, limit: int = TAIL_BUFFER) -> None:
        self._limit = limit
        self._items: deque[Chained] = deque()
        self._wake = anyio.Event()
        self.overflowed = False
        self.closed = False

    def close(self) -> None:
        """End the tail (the service is stopping); the client is told to reconnect."""
        self.closed = True
        self._wake.set()

    def push(self, entry: Chained) -> None:
        # Once an entry was dropped the client would see a gap, so everything after it is dropped too.
        if self.overflowed or len(self._items) >= self._limit:
            self.overflowed = True
        else:
            self._items.append(entry)
        self._wake.set()

    async def next(self) -> Chained:
        """The next new entry.

        Raises:
            StoreUnavailable: the service is stopping.
            TailTooSlow: the client fell too far behind and entries were dropped for it.
        """
        while not self._items:
            if self.closed:
                raise StoreUnavailable("the audit service is stopping; reconnect to follow the chain")
            if self.overflowed:
                raise TailTooSlow(f"the tail fell more than {self._limit} entries behind; reconnect with a backlog")
            self._wake = anyio.Event()  # set by the next push or close
            await self._wake.wait()
        return self._items.popleft()


class AuditViews:
    """The rings every query reads: management calls, tool calls, risk events and all recent entries."""

    def __init__(self, capacity: int, on_entry: Callable[[Chained], None] | None = None) -> None:
        self.capacity = capacity
        self._on_entry = on_entry
        self.management: Ring[Chained] = Ring(capacity)
        self.tools: Ring[Chained] = Ring(capacity)
        self.risks: Ring[RiskView] = Ring(capacity)
        # Serves TailEntries' backlog, which may ask for up to a full page whatever the capacity.
        self.recent: Ring[Chained] = Ring(max(capacity, MAX_PAGE))
        # The newest calls that needed a decision, a page's worth: every READ call asks the HITL summary for them,
        # and finding them among all recent entries scanned the whole ring when no call had needed one lately.
        self.decisions: Ring[Chained] = Ring(MAX_PAGE)
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
        self.recent.add(entry)
        if records.needed_decision(entry.record):
            self.decisions.add(entry)
        if (call := as_management(entry)) is not None:
            self.management.add(call)
        if (tool := as_tool_call(entry)) is not None:
            self.tools.add(tool)
        if (risk := as_risk(entry)) is not None:
            self.risks.add(risk)
        self.last = entry
        if self._on_entry is not None:
            self._on_entry(entry)

    def _rings(self) -> tuple[Ring[Chained], Ring[Chained], Ring[RiskView], Ring[Chained]]:
        return self.management, self.tools, self.risks, self.recent

    async def rebuild(self, history: LedgerHistory, last_seq: int, budget: int | None = None) -> int:
        """Fill the rings from the ledger's newest entries up to `last_seq`, reading backwards in windows until
        every ring is full, the stream's start is reached, or `budget` sequences were read (8x the capacity by
        default, so a large stream is never replayed whole). Returns how many entries were taken.
        """
        budget = budget if budget is not None else 8 * max(self.capacity, MAX_PAGE)
        wanted = {"management": self.management.capacity, "tool": self.tools.capacity, "risk": self.risks.capacity}
        wanted_recent = self.recent.capacity
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
                    wanted_recent -= 1
                    for kind, view in (("management", as_management), ("tool", as_tool_call), ("risk", as_risk)):
                        if view(entry) is not None:
                            wanted[kind] -= 1
                if wanted_recent <= 0 and all(count <= 0 for count in wanted.values()):
                    at_start = False
                    break
        for ring in self._rings():
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


async def page(
    ring: Ring[T],
    view: Callable[[Chained], T | None],
    matches: Callable[[T], bool],
    history: LedgerHistory,
    *,
    limit: int,
    before_seq: int,
    budget: int = SCAN_BUDGET,
) -> Page[T]:
    """Up to `limit` matching items older than `before_seq` (0: the newest), newest first.

    The ring answers when it covers the page; below its horizon the ledger is read backwards, at most
    `budget` sequences per call. When that budget runs out first, the page may be short and its cursor
    says where the next call continues.
    """
    wanted = limit + 1  # one more than the page, to know whether an older page exists
    newer_first = (item for item in ring.newest_first() if not before_seq or item.seq < before_seq)
    found = list(islice((item for item in newer_first if matches(item)), wanted))
    if len(found) < wanted and ring.horizon > 0:
        scan_below = min(before_seq, ring.horizon) if before_seq else ring.horizon
        older, unscanned_below = await _scan(history, scan_below, budget, view, matches, wanted - len(found))
        found.extend(older)
        if len(found) < wanted and unscanned_below:
            return Page(found, next_before_seq=unscanned_below)
    if len(found) == wanted:
        return Page(found[:limit], next_before_seq=found[limit - 1].seq)
    return Page(found, next_before_seq=0)


async def _scan(
    history: LedgerHistory,
    below: int,
    budget: int,
    view: Callable[[Chained], T | None],
    matches: Callable[[T], bool],
    wanted: int,
) -> tuple[list[T], int]:
    """Up to `wanted` matching items below sequence `below`, newest first, and the sequence below which the
    stream was left unscanned because the budget ran out (0 when the scan reached the stream's start).
    """
    found: list[T] = []
    unscanned_below = 0
    async with aclosing(history.windows_back(below, budget)) as windows:
        async for window in windows:
            unscanned_below = 0 if window.at_start else window.start_seq
            for message in reversed(window.messages):
                entry = decode(message)
                item = view(entry) if entry is not None else None
                if item is not None and matches(item):
                    found.append(item)
                    if len(found) == wanted:
                        return found, unscanned_below
    return found, unscanned_below
