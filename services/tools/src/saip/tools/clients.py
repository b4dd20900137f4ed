"""The tools service's outbound side: its key-value bucket in NATS, with revisions on every write, and a copy of
the bucket kept by one watch for the service's life (a read or a listing is answered from it with no round trip to
NATS, and never opens a consumer of its own, so a burst of listings leaves nothing behind on the server)."""

from __future__ import annotations

import anyio
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from saip.common import names
from saip.common.bucket_copy import CATCH_UP_WITHIN, BucketCopy
from saip.common.nats_failures import answered
from saip.tools.errors import Conflict, StoreUnavailable

HISTORY = 5  # revisions the bucket keeps per key (the gateways create it with the same history)


class WatchedRecords(BucketCopy[tuple[bytes, int]]):
    """Records by key in one bucket (saip-tools; the upstream side keeps saip-servers and saip-ledger alike). A write
    names the revision it read, so nothing is overwritten implicitly: a write against a record that moved on (or a
    create of one that exists) is a Conflict.

    The values and their revisions are a copy that only the bucket's watch changes (`saip.common.bucket_copy`: `watch`,
    kept alive by the service, one ordered consumer for the service's life), so a read costs no round trip to NATS: a
    published tool's call reads its record and the exposure from here. A write returns once the watch has shown it, so
    a caller reads and lists its own writes, and a publish or a delete is in force on this replica before it returns;
    another replica's write arrives with its watch (well under a millisecond on one NATS server), and a write against
    a copy that is behind is refused by its revision. While the watch is not following (before its first full read,
    or restarting after NATS came back), a read goes to the bucket itself.
    """

    def __init__(self, kv: KeyValue, js: JetStreamContext | None = None, bucket: str = names.TOOLS_BUCKET) -> None:
        super().__init__(kv, js, bucket, StoreUnavailable)

    def value(self, entry: KeyValue.Entry) -> tuple[bytes, int] | None:
        if entry.revision is None:
            return None
        # An all-default protobuf record serializes to nothing, which NATS hands back as None.
        return entry.value or b"", entry.revision

    async def get(self, key: str) -> tuple[bytes, int] | None:
        if self.following:
            return self._values.get(key)
        try:
            entry = await answered(self._kv.get(key), StoreUnavailable)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        return self.value(entry)

    async def create(self, key: str, value: bytes) -> int:
        try:
            revision = int(await answered(self._kv.create(key, value), StoreUnavailable))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' was created by someone else meanwhile; read it again.") from None
        await self.caught_up(revision)
        return revision

    async def update(self, key: str, value: bytes, revision: int) -> int:
        try:
            written = int(await answered(self._kv.update(key, value, last=revision), StoreUnavailable))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.") from None
        await self.caught_up(written)
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
                await self.ready()
        except TimeoutError:
            raise StoreUnavailable(f"The {self._bucket} bucket has not been read yet; try again shortly.") from None
        return sorted(key for key in self._values if key.startswith(prefix))
