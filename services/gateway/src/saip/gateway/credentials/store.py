"""The credentials' records in NATS key-value buckets: one typed adapter (`Records`) over a bucket's keys of one
prefix, which the OAuth records use too, and the buckets' own shapes (credentials, first sightings, use counts).

Every call is bounded by the bucket's own request timeout; NATS away is `ServiceUnavailable`, which the REST API
answers 503 with nothing changed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from google.protobuf.message import DecodeError, Message
from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from saip.common import bus
from saip.gateway.errors import ServiceUnavailable
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=Message)

CREDENTIAL = "credential."
SEEN = "seen."


@dataclass(frozen=True)
class Stored(Generic[M]):
    """A record as read, with the revision a compare-and-set write names."""

    value: M
    revision: int


@dataclass(frozen=True)
class Gone:
    """A key deleted (or purged) from the bucket: what a watch reports for it."""

    name: str


def _unavailable(exc: Exception) -> ServiceUnavailable:
    return ServiceUnavailable("nats", type(exc).__name__)


class Records(Generic[M]):
    """The records of one message type under one key prefix of a bucket (`<prefix><name>`)."""

    def __init__(self, kv: KeyValue, prefix: str, parse: Callable[[bytes], M]) -> None:
        self._kv = kv
        self._prefix = prefix
        self._parse = parse

    async def get(self, name: str) -> Stored[M] | None:
        try:
            entry = await self._kv.get(self._prefix + name)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None
        value = self._read(entry.key, entry.value)
        return Stored(value, entry.revision or 0) if value is not None else None

    async def create(self, name: str, value: M) -> bool:
        """Write a record that must not exist yet; False when it does."""
        try:
            await self._kv.create(self._prefix + name, value.SerializeToString())
        except KeyWrongLastSequenceError:
            return False
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None
        return True

    async def update(self, name: str, value: M, last: int) -> bool:
        """Write over the revision read; False when it moved since (another replica wrote or deleted it)."""
        try:
            await self._kv.update(self._prefix + name, value.SerializeToString(), last=last)
        except KeyWrongLastSequenceError:
            return False
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None
        return True

    async def put(self, name: str, value: M) -> None:
        try:
            await self._kv.put(self._prefix + name, value.SerializeToString())
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None

    async def delete(self, name: str, last: int | None = None) -> bool:
        """Delete the record (only at revision `last` when given); False when there was none, or it moved."""
        try:
            if last is None and await self.get(name) is None:
                return False
            await self._kv.delete(self._prefix + name, last=last)
        except KeyWrongLastSequenceError:
            return False
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None
        return True

    async def all(self) -> dict[str, M]:
        """Every record there is now, by name (a key deleted a moment ago is listed until its marker goes: it is
        read, and left out)."""
        try:
            keys = await bus.kv_keys(self._kv, self._prefix)
        except (NatsError, TimeoutError) as exc:
            raise _unavailable(exc) from None
        found: dict[str, M] = {}
        for key in keys:
            name = key.removeprefix(self._prefix)
            stored = await self.get(name)
            if stored is not None:
                found[name] = stored.value
        return found

    async def watch(self) -> AsyncIterator[tuple[str, M] | Gone | None]:
        """Every record (name, value), None once the current ones are through, then each change (`Gone` for a
        deletion); keys of other prefixes in the bucket are passed over."""
        async with contextlib.aclosing(bus.kv_updates(self._kv)) as updates:
            async for entry in updates:
                if entry is None:
                    yield None
                    continue
                if not entry.key.startswith(self._prefix):
                    continue
                name = entry.key.removeprefix(self._prefix)
                if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
                    yield Gone(name)
                    continue
                value = self._read(entry.key, entry.value)
                if value is not None:
                    yield name, value

    def _read(self, key: str, raw: bytes | None) -> M | None:
        try:
            return self._parse(raw or b"")
        except DecodeError:
            logger.error("unreadable record skipped", extra={"key": key})
            return None


def credentials(kv: KeyValue) -> Records[gateway_pb2.CredentialRecord]:
    """The credential records of a bucket (saip-clients: named tokens; saip-grants: OAuth grants)."""
    return Records(kv, CREDENTIAL, gateway_pb2.CredentialRecord.FromString)


def sightings(kv: KeyValue) -> Records[gateway_pb2.CredentialSeen]:
    """When each credential was first seen (saip-clients), written once."""
    return Records(kv, SEEN, gateway_pb2.CredentialSeen.FromString)


def usage(kv: KeyValue) -> Records[gateway_pb2.CredentialUsage]:
    """Each replica's count of each credential's use (saip-usage), key <credential>.<replica>."""
    return Records(kv, "", gateway_pb2.CredentialUsage.FromString)
