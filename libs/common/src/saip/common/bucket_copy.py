"""A copy of one NATS key-value bucket, by key, kept by one watch for a service's life.

A read is answered from the copy: no round trip to NATS, and no consumer of its own, so a burst of listings leaves
nothing behind on the server. Only the watch changes the copy: each run reads every key afresh into a copy of its
own, swapped in at once at the end of the current values (no reader sees half a bucket), then applies each change.
A write waits (`caught_up`) until the watch has shown it, so a caller reads its own writes, and `current` waits for
every write the bucket had taken, by any replica. The service keeps `watch` alive (`saip.common.watch.keep_alive`).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
from nats.js import JetStreamContext
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from saip.common import bus
from saip.common.nats_failures import answered
from saip.common.watch import Applied

CATCH_UP_WITHIN = 5.0  # how long a write (or `current`) waits for the bucket watch to show it

_Value = TypeVar("_Value")


class BucketCopy(ABC, Generic[_Value]):
    """The copy of `bucket` in `_values`: what `value` makes of each key's last entry. NATS not answering, or the
    watch not catching up, raises `away(sentence)` (the service's StoreUnavailable)."""

    def __init__(
        self, kv: KeyValue, js: JetStreamContext | None, bucket: str, away: Callable[[str], Exception]
    ) -> None:
        self._kv = kv
        self._js = js
        self._bucket = bucket
        self._away = away
        self._values: dict[str, _Value] = {}
        self._applied = Applied()
        self._ready = anyio.Event()
        self.following = False  # the watch has read the whole bucket and follows it now
        self.on_change: Callable[[], None] = lambda: None  # called each time the copy moved

    @abstractmethod
    def value(self, entry: KeyValue.Entry) -> _Value | None:
        """What the copy keeps of a written entry; None keeps nothing under its key."""

    async def ready(self) -> None:
        """Returns once the first run of the watch has read the whole bucket."""
        await self._ready.wait()

    async def current(self) -> None:
        """Returns once the copy holds every write the bucket had taken when this was called (one round trip).

        What a delete waits for (it does not say its revision), and a listing that answers a change another process
        saw: a gateway lists as soon as its own watch shows a write, which can be before this copy's watch has applied
        it, and a listing from a copy that is behind would be that gateway's last until the next change.
        """
        if self._js is None:
            return
        info = await answered(self._js.stream_info(f"KV_{self._bucket}"), self._away)
        await self.caught_up(info.state.last_seq or 0)

    async def caught_up(self, revision: int) -> None:
        """Returns once the watch has shown `revision` (a write's)."""
        if not await self._applied.reached(revision, CATCH_UP_WITHIN):
            raise self._away(f"The {self._bucket} bucket watch did not catch up with NATS in time; try again.")

    async def watch(self) -> None:
        """One run of the watch: every key read afresh (swapped in at once), then each change, until it fails."""
        fresh: dict[str, _Value] = {}
        initial, seen = True, 0
        try:
            async with contextlib.aclosing(bus.kv_updates(self._kv)) as updates:
                async for entry in updates:
                    if entry is None:  # the end of the current values
                        if initial:
                            self._values, initial = fresh, False
                            self._applied.advance(seen)
                            self.following = True
                            self._ready.set()
                            self.on_change()
                        continue
                    kept = None if entry.operation in (KV_DEL, KV_PURGE) else self.value(entry)
                    target = fresh if initial else self._values
                    if kept is None:
                        target.pop(entry.key, None)
                    else:
                        target[entry.key] = kept
                    if initial:
                        seen = max(seen, entry.revision or 0)
                    else:
                        self._applied.advance(entry.revision or 0)
                        self.on_change()
        finally:
            self.following = False
