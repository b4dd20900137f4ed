"""Per-client limits over a fixed window: management calls (`management.rate-limit`), questions to the person
(`management.question-limit`), and failed token requests (`oauth.token-failure-limit`, by address).

A client is the caller's credential (`Caller.client`); a caller without one (no auth on /mcp, in-process) is counted
as it identifies itself: its name and version, and on 2025-11-25 its MCP session.

The windows follow each other from the moment the limit is made (the gateway's start), so a count never restarts at an
instant the machine sets (the monotonic clock counts from the boot, and its multiples of the window fall anywhere).

The state is bounded: it holds only the clients seen in the current window (a new window starts empty), and at most
`MAX_CLIENTS` of them; clients beyond that share one count, so inventing names does not grow it either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

MAX_CLIENTS = 10_000
OVERFLOW = "(other clients)"


class WindowLimit:
    """At most `limit` events per client in each window of `window` seconds, the first one starting now; a limit of 0
    is no limit."""

    def __init__(
        self, limit: int, window: float, *, clock: Callable[[], float] = time.monotonic, max_clients: int = MAX_CLIENTS
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._start = clock()
        self._max_clients = max_clients
        self._index = -1
        self._counts: dict[str, int] = {}

    def __len__(self) -> int:
        """The clients counted in the current window (what this limit holds)."""
        return len(self._counts)

    def take(self, client: str) -> float | None:
        """Count one event of `client`: None when it is within the limit, else the seconds until it may try again."""
        return self._counted(client, count=True)

    def exceeded(self, client: str) -> float | None:
        """Whether `client` used up this window already (the seconds until it may try again), counting nothing."""
        return self._counted(client, count=False)

    def _counted(self, client: str, *, count: bool) -> float | None:
        if self.limit <= 0:
            return None
        now = self._clock() - self._start
        index = math.floor(now / self.window)
        if index != self._index:
            self._index = index
            self._counts = {}
        if client not in self._counts and len(self._counts) >= self._max_clients:
            client = OVERFLOW
        made = self._counts.get(client, 0)
        if made >= self.limit:
            return (index + 1) * self.window - now
        if count:
            self._counts[client] = made + 1
        return None


def seconds_left(retry: float) -> int:
    """The whole seconds a refusal tells the AI to wait (at least 1)."""
    return max(1, math.ceil(retry))
