"""`bus.kv_keys` lists a bucket's keys as its stream holds them: every key just written, by prefix, sorted; a deleted
key until its marker goes (its `get` says so). nats-py's own `keys()` could answer fewer, or NoKeysError, right after
a write: its watcher may say "no more" before reading entries the server already sent. `bus.kv_updates` gives every
current entry before its "no more" (None) for the same reason, then each change."""

from __future__ import annotations

import contextlib

import pytest
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KV_DEL, KeyValue

from saip.common import bus, jetstream
from saip.common.natsd import LocalNats

pytestmark = pytest.mark.integration


async def test_the_keys_are_those_the_stream_holds_by_prefix_and_sorted(nats_server: LocalNats) -> None:
    async with bus.connection(nats_server.url, "keys-test") as nc:
        kv = await jetstream.ensure_kv(nc.jetstream(), "keys-listed")
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
        kv = await jetstream.ensure_kv(nc.jetstream(), "keys-at-once")
        for n in range(200):
            await kv.put(f"conversation.{n:03d}", b"x")
            assert len(await bus.kv_keys(kv, "conversation.")) == n + 1


async def _current(kv: KeyValue, after: str) -> tuple[list[KeyValue.Entry], KeyValue.Entry | None]:
    """The entries a watch gives before its "no more", and the first one after it, a write of the key `after` made
    once it said so (None when the watch ended instead)."""
    before: list[KeyValue.Entry] = []
    async with contextlib.aclosing(bus.kv_updates(kv)) as updates:
        async for entry in updates:
            if entry is None:
                break
            before.append(entry)
        await kv.put(after, b"x")
        async for entry in updates:
            return before, entry
    return before, None


async def test_a_watch_gives_every_current_entry_before_it_says_no_more(nats_server: LocalNats) -> None:
    """Opened right after each write (200 times), as a service's watch opens on a bucket being written: nats-py's
    watcher alone put its None ahead of entries already sent about one time in twenty."""
    async with bus.connection(nats_server.url, "updates-test") as nc:
        kv = await jetstream.ensure_kv(nc.jetstream(), "updates-at-once")
        for n in range(200):
            await kv.put(f"record.{n:03d}", b"x")
            before, after = await _current(kv, f"after.{n:03d}")
            records = sorted(entry.key for entry in before if entry.key.startswith("record."))
            assert records == [f"record.{k:03d}" for k in range(n + 1)]
            assert len(before) == 2 * n + 1  # and each write made after an earlier watch's marker
            assert after is not None and after.key == f"after.{n:03d}"


async def test_a_deleted_key_comes_as_its_deletion_before_no_more(nats_server: LocalNats) -> None:
    async with bus.connection(nats_server.url, "updates-test") as nc:
        kv = await jetstream.ensure_kv(nc.jetstream(), "updates-deleted")
        before, _ = await _current(kv, "after.first")
        assert before == []  # an empty bucket says "no more" at once
        await kv.put("kept", b"1")
        await kv.put("gone", b"2")
        await kv.delete("gone")
        before, after = await _current(kv, "after.second")
        assert {entry.key: entry.operation for entry in before} == {"after.first": None, "kept": None, "gone": KV_DEL}
        assert after is not None and after.key == "after.second"


async def test_no_more_is_said_when_a_listed_key_does_not_come(
    nats_server: LocalNats, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key listed as the watch opened and gone before it was read (its age ran out): the watch says "no more" after
    MARKER_WITHIN rather than never. The listing is made to name a key the bucket never held."""
    listed = bus.kv_keys

    async def with_a_ghost(kv: KeyValue, prefix: str = "") -> list[str]:
        return [*await listed(kv, prefix), "ghost"]

    monkeypatch.setattr(bus, "kv_keys", with_a_ghost)
    monkeypatch.setattr(bus, "MARKER_WITHIN", 0.3)
    async with bus.connection(nats_server.url, "updates-test") as nc:
        kv = await jetstream.ensure_kv(nc.jetstream(), "updates-ghost")
        before, after = await _current(kv, "after.ghost")
        assert before == []
        assert after is not None and after.key == "after.ghost"
