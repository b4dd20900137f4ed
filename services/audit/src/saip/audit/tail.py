"""One TailEntries client's queue of the entries chained after it began, in chain order and without a gap: it holds
at most its limit unread, and a client that falls further behind is cut off (it reconnects with a backlog) rather
than shown a stream with entries missing.
"""

from __future__ import annotations

from collections import deque

import anyio

from saip.audit.entries import Chained
from saip.audit.errors import StoreUnavailable, TailTooSlow

# How many new entries a TailEntries client may lag behind before it is cut off.
TAIL_BUFFER = 2_000


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
