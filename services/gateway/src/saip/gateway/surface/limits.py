"""Per-client limits over a fixed window: management calls (`management.rate-limit`) and questions to the person
(`management.question-limit`).

A client is the caller as it identifies itself (`Caller.client`): its name and version, and on 2025-11-25 its MCP
session. The state is bounded: it holds only the clients seen in the current window (a new window starts empty), and
at most `MAX_CLIENTS` of them; clients beyond that share one count, so inventing names does not grow it either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

MAX_CLIENTS = 10_000
OVERFLOW = "(other clients)"


class WindowLimit:
    """At most `limit` events per client in each window of `window` seconds; a limit of 0 is no limit."""

    def __init__(
        self, limit: int, window: float, *, clock: Callable[[], float] = time.monotonic, max_clients: int = MAX_CLIENTS
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._max_clients = max_clients
        self._index = -1
        self._counts: dict[str, int] = {}

    def __len__(self) -> int:
        """The clients counted in the current window (what this limit holds)."""
        return len(self._counts)

    def take(self, client: str) -> float | None:
        """Count one event of `client`: None when it is within the limit, else the seconds until it may try again."""
        if self.limit <= 0:
            return None
        now = self._clock()
        index = math.floor(now / self.window)
        if index != self._index:
            self._index = index
            self._counts = {}
        if client not in self._counts and len(self._counts) >= self._max_clients:
            client = OVERFLOW
        count = self._counts.get(client, 0)
        if count >= self.limit:
            return (index + 1) * self.window - now
        self._counts[client] = count + 1
        return None


def seconds_left(retry: float) -> int:
    """The whole seconds a refusal tells the AI to wait (at least 1)."""
    return max(1, math.ceil(retry))
