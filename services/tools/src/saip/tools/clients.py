"""The tools service's outbound side: its key-value bucket in NATS, with revisions on every write."""

from __future__ import annotations

from nats.errors import Error as NatsError
from nats.js.errors import BadRequestError, KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError, NoKeysError
from nats.js.kv import KeyValue

from saip.tools.errors import Conflict, StoreUnavailable

# JetStream's error codes for a write whose expected last sequence moved on (what nats-py's update maps itself).
WRONG_LAST_SEQUENCE = (10071, 10164)

HISTORY = 5  # revisions the bucket keeps per key (the gateways create it with the same history)


class KvRecords:
    """Records by key in the saip-tools bucket. A write names the revision it read, so nothing is overwritten
    implicitly: a write against a record that moved on (or a create of one that exists) is a Conflict."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> tuple[bytes, int] | None:
        try:
            entry = await self._kv.get(key)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        except (NatsError, TimeoutError) as exc:
            raise _away(exc) from None
        if entry.revision is None:
            return None
        # An all-default protobuf record serializes to nothing, and NATS hands an empty value back as None.
        return entry.value or b"", entry.revision

    async def create(self, key: str, value: bytes) -> int:
        try:
            return int(await self._kv.create(key, value))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' was created by someone else meanwhile; read it again.") from None
        except (NatsError, TimeoutError) as exc:
            raise _away(exc) from None

    async def update(self, key: str, value: bytes, revision: int) -> int:
        try:
            return int(await self._kv.update(key, value, last=revision))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.") from None
        except (NatsError, TimeoutError) as exc:
            raise _away(exc) from None

    async def delete(self, key: str, revision: int) -> None:
        try:
            await self._kv.delete(key, last=revision)
        except BadRequestError as exc:
            # nats-py raises a lost compare-and-set delete as the stream's own error, not KeyWrongLastSequenceError.
            if exc.err_code not in WRONG_LAST_SEQUENCE:
                raise _away(exc) from None
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.") from None
        except (NatsError, TimeoutError) as exc:
            raise _away(exc) from None

    async def keys(self, prefix: str) -> list[str]:
        try:
            found = await self._kv.keys()
        except NoKeysError:
            return []
        except (NatsError, TimeoutError) as exc:
            raise _away(exc) from None
        return sorted(key for key in found if key.startswith(prefix))


def _away(exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"NATS did not answer ({type(exc).__name__}); try again shortly.")
