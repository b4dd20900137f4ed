"""`bus.kv_keys` lists a bucket's keys as its stream holds them: every key just written, by prefix, sorted; a deleted
key until its marker goes (its `get` says so). nats-py's own `keys()` could answer fewer, or NoKeysError, right after
a write: its watcher may say "no more" before reading entries the server already sent."""

from __future__ import annotations

import pytest
from nats.js.errors import KeyNotFoundError

from saip.common import bus
from saip.common.natsd import LocalNats

pytestmark = pytest.mark.integration


async def test_the_keys_are_those_the_stream_holds_by_prefix_and_sorted(nats_server: LocalNats) -> None:
    async with bus.connection(nats_server.url, "keys-test") as nc:
        kv = await bus.ensure_kv(nc.jetstream(), "keys-listed")
        assert await bus.kv_keys(kv) == []
        for key in ("conversation.b", "conversation.a", "other.c"):
            await kv.put(key, b"x")
        await kv.delete("conversation.b")
        assert await bus.kv_keys(kv, "conversation.") == ["conversation.a", "conversation.b"]
        assert await bus.kv_keys(kv) == ["conversation.a", "conversation.b", "other.c"]
        with pytest.raises(KeyNotFoundError):  # nats-py says a deleted key is not found
            await kv.get("conversation.b")


async def test_a_key_is_listed_as_soon_as_its_write_is_acknowledged(nats_server: LocalNats) -> None:
    async with bus.connection(nats_server.url, "keys-test") as nc:
        kv = await bus.ensure_kv(nc.jetstream(), "keys-at-once")
        for n in range(200):
            await kv.put(f"conversation.{n:03d}", b"x")
            assert len(await bus.kv_keys(kv, "conversation.")) == n + 1
