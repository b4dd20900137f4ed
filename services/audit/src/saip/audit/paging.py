"""A listing's pages: rings of the newest items of a kind, and a page read from a ring and, below it, from the ledger.

A ring knows its kind: `view` makes its item of a chained entry, or None for an entry of another kind, so one
function decides what the ring takes (`offer`), what a rebuild counts towards filling it, and what a page read from
the ledger below it finds.

A ring's `horizon` is the lowest stream sequence from which it holds every item of its kind (0: the whole history),
so a page reaching below the horizon is read from the stream backwards instead, at most `SCAN_BUDGET` sequences a
call; a page cut short by that budget says in its cursor where the next call continues, so no item is skipped. Pages
are newest first, and an item's cursor is the stream sequence of its ledger message.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import aclosing
from dataclasses import dataclass
from itertools import islice
from typing import Generic, Protocol, TypeVar

from saip.audit.entries import Chained, decode
from saip.audit.errors import InvalidRequest
from saip.audit.ports import LedgerHistory

MAX_PAGE = 500
# Stream sequences one query may scan below a ring before it returns a partial page with a cursor.
SCAN_BUDGET = 20_000


class _HasSeq(Protocol):
    @property
    def seq(self) -> int: ...


T = TypeVar("T", bound=_HasSeq)


class Ring(Generic[T]):
    """The newest `capacity` items of the kind `view` picks, oldest evicted first; the horizon rises past every
    evicted item."""

    def __init__(self, capacity: int, view: Callable[[Chained], T | None]) -> None:
        self.capacity = capacity
        self.view = view
        self.horizon = 0
        self._items: deque[T] = deque()

    def offer(self, entry: Chained) -> None:
        """Keep the entry's item when it is of this ring's kind."""
        item = self.view(entry)
        if item is not None:
            self.add(item)

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


async def page(
    ring: Ring[T],
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
        older, unscanned_below = await _scan(history, scan_below, budget, ring.view, matches, wanted - len(found))
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
