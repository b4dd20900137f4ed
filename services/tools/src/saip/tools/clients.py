"""The tools service's outbound side: its key-value bucket in NATS, with revisions on every write, and a copy of
the bucket kept by one watch for the service's life (a read or a listing is answered from it with no round trip to
NATS, and never opens a consumer of its own, so a burst of listings leaves nothing behind on the server)."""

from __future__ import annotations

import contextlib

import anyio
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from saip.common import bus, names
from saip.common.nats_failures import answered
from saip.common.watch import Applied
from saip.tools.errors import Conflict, StoreUnavailable

HISTORY = 5  # revisions the bucket keeps per key (the gateways create it with the same history)
CATCH_UP_WITHIN = 5.0  # how long a write or a listing waits for the bucket watch


class WatchedRecords:
    """Records by key in one bucket (saip-tools; the upstream side keeps saip-servers and saip-ledger alike). A write
    names the revision it read, so nothing is overwritten implicitly: a write against a record that moved on (or a
    create of one that exists) is a Conflict.

    The values and their revisions are a copy that only the bucket's watch changes (`watch`, kept alive by the
    service, one ordered consumer for the service's life), so a read costs no round trip to NATS: a published tool's
    call reads its record and the exposure from here. A write returns once the watch has shown it, so a caller reads
    and lists its own writes, and a publish or a delete is in force on this replica before it returns; another
    replica's write arrives with its watch (well under a millisecond on one NATS server), and a write against a copy
    that is behind is refused by its revision. While the watch is not following (before its first full
    read, or restarting after NATS came back), a read goes to the bucket itself.
    """

    def __init__(self, kv: KeyValue, js: JetStreamContext | None = None, bucket: str = names.TOOLS_BUCKET) -> None:
        self._kv = kv
        self._js = js
        self._bucket = bucket
        self._values: dict[str, tuple[bytes, int]] = {}
        self._applied = Applied()
        self._ready = anyio.Event()
        self.following = False

    async def get(self, key: str) -> tuple[bytes, int] | None:
        if self.following:
            return self._values.get(key)
        try:
            entry = await answered(self._kv.get(key), StoreUnavailable)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if entry.revision is None:
            return None
        # An all-default protobuf record serializes to nothing, and NATS hands an empty value back as None.
        return entry.value or b"", entry.revision

    async def create(self, key: str, value: bytes) -> int:
        try:
            revision = int(await answered(self._kv.create(key, value), StoreUnavailable))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' was created by someone else meanwhile; read it again.") from None
        await self._caught_up(revision)
        return revision

    async def update(self, key: str, value: bytes, revision: int) -> int:
        try:
            written = int(await answered(self._kv.update(key, value, last=revision), StoreUnavailable))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.") from None
        await self._caught_up(written)
        return written

    async def delete(self, key: str, revision: int) -> None:
        try:
            await answered(self._kv.delete(key, last=revision), StoreUnavailable)
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.") from None
        await self.current()  # a delete does not say its revision; the stream's last sequence covers it

    async def keys(self, prefix: str) -> list[str]:
        """The keys as the watch last showed them (it has read the whole bucket once before this answers)."""
        try:
            with anyio.fail_after(CATCH_UP_WITHIN):
                await self._ready.wait()
        except TimeoutError:
            raise StoreUnavailable(f"The {self._bucket} bucket has not been read yet; try again shortly.") from None
        return sorted(key for key in self._values if key.startswith(prefix))

    # The watch.

    async def ready(self) -> None:
        """Returns once the first run of the watch has read the whole bucket."""
        await self._ready.wait()

    async def current(self) -> None:
        """Returns once the copy holds every write the bucket had taken when this was called (one round trip).

        What a delete waits for (it does not say its revision), and a listing that answers a change another process
        saw: a gateway lists the served tools as soon as its own watch shows a write, which can be before this
        service's watch has applied it, and a listing from a copy that is behind would be that gateway's last until
        the next change.
        """
        if self._js is None:
            return
        info = await answered(self._js.stream_info(f"KV_{self._bucket}"), StoreUnavailable)
        await self._caught_up(info.state.last_seq or 0)

    async def _caught_up(self, revision: int) -> None:
        if not await self._applied.reached(revision, CATCH_UP_WITHIN):
            raise StoreUnavailable(f"The {self._bucket} bucket watch did not catch up with NATS in time; try again.")

    async def watch(self) -> None:
        """One run of the watch: every record read afresh (swapped in at once), then each change, until it fails."""
        fresh: dict[str, tuple[bytes, int]] = {}
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
                        continue
                    target = fresh if initial else self._values
                    if entry.operation in (KV_DEL, KV_PURGE) or entry.revision is None:
                        target.pop(entry.key, None)
                    else:
                        # An all-default protobuf record serializes to nothing, which NATS hands back as None.
                        target[entry.key] = entry.value or b"", entry.revision
                    if initial:
                        seen = max(seen, entry.revision or 0)
                    else:
                        self._applied.advance(entry.revision or 0)
        finally:
            self.following = False
