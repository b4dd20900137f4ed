"""The console's live feed: what changed, by topic, for every open console of this replica.

Each replica follows what it already can see of the shared state (the key-value buckets the services write, the audit
trail as it is chained, the upstream connections' states as the tools replicas tell them) and tells every subscriber
which topic moved; a console then reads that topic's REST routes again. A topic says *that* something changed (and, for
the trail, the chained record as the monitor shows it), never a value a REST route would not show, so the feed holds no
rule and no secret of its own. Because the sources are shared, a change made through any replica reaches the consoles of
every replica.

A topic is told at once, then at most once every `THROTTLE` seconds while it keeps moving (the last change always
goes out): under load the trail moves thousands of times a second, and a console reads a page again, not a record.
A subscriber that falls behind by more than its queue holds is told to read everything again (`resync`) rather than
be given a partial story.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from saip.common import names

logger = logging.getLogger(__name__)

# Which topic each followed bucket's changes are. Buckets of services that are not running yet are followed once
# they exist (the watch is kept alive with backoff).
BUCKET_TOPICS: dict[str, str] = {
    names.QUESTIONS_BUCKET: "approvals",
    names.TOOLS_BUCKET: "tools",
    names.SERVERS_BUCKET: "servers",
    names.LEDGER_BUCKET: "servers",
    names.KNOWLEDGE_BUCKET: "knowledge",
    names.SHIPYARD_BUCKET: "shipyard",
    names.CHAT_BUCKET: "chat",
    names.AUTH_BUCKET: "token",
    names.CLIENTS_BUCKET: "clients",
    names.GRANTS_BUCKET: "clients",
    names.USAGE_BUCKET: "clients",
}
RESYNC = "resync"
QUEUE = 256
THROTTLE = 0.25


@dataclass(frozen=True)
class Event:
    id: int
    topic: str
    data: dict[str, Any] = field(default_factory=dict)


class Subscription:
    """One console's queue of events."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE)
        self.behind = False

    def put(self, event: Event) -> None:
        if self.behind:
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            # What is queued no longer tells the whole story: drop it, and tell the console to read everything again.
            self.behind = True
            while not self._queue.empty():
                self._queue.get_nowait()
            self._queue.put_nowait(Event(event.id, RESYNC))

    async def next(self, within: float) -> Event | None:
        """The next event, or None when none came within `within` seconds."""
        try:
            async with asyncio.timeout(within):
                event = await self._queue.get()
        except TimeoutError:
            return None
        if event.topic == RESYNC:
            self.behind = False
        return event


class Feed:
    """This replica's fan-out of changes to its open consoles."""

    def __init__(self, throttle: float = THROTTLE) -> None:
        self._subscribers: set[Subscription] = set()
        self._ids: Iterator[int] = itertools.count(1)
        self._throttle = throttle
        # A topic inside its throttle window -> the latest data held back for the window's end (None: nothing moved).
        self._held: dict[str, dict[str, Any] | None] = {}

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, topic: str, data: dict[str, Any] | None = None) -> None:
        """Tell every subscriber that `topic` moved: now, or at its throttle window's end (with the latest data)."""
        data = data or {}
        if topic in self._held:
            self._held[topic] = data
            return
        self._send(topic, data)
        self._held[topic] = None
        asyncio.get_running_loop().call_later(self._throttle, self._release, topic)

    def _release(self, topic: str) -> None:
        data = self._held.pop(topic, None)
        if data is not None:
            self.publish(topic, data)

    def _send(self, topic: str, data: dict[str, Any]) -> None:
        event = Event(next(self._ids), topic, data)
        for subscription in list(self._subscribers):
            subscription.put(event)

    @contextmanager
    def subscribed(self) -> Iterator[Subscription]:
        subscription = Subscription()
        self._subscribers.add(subscription)
        try:
            yield subscription
        finally:
            self._subscribers.discard(subscription)


async def changes(entries: AsyncIterator[Any]) -> AsyncIterator[str]:
    """The keys of a bucket watch's changes after its current entries (the first None ends those)."""
    current = True
    async for entry in entries:
        if entry is None:
            current = False
        elif not current:
            yield entry.key
