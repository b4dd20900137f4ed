"""The tools service's watched copy of its bucket, against a real nats-server: reads are answered from the copy with
no round trip, a write is in the copy before it returns (so a publish or a delete is in force on this replica at
once), another writer's change arrives through the watch (and `current` waits for it), and until the watch has read
the bucket a read goes to NATS. Then the same through the service, on two replicas of one bucket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import grpc
import pytest
from nats.js.kv import KeyValue

from saip.common import jetstream, names
from saip.common.natsd import LocalNats
from saip.tools.clients import WatchedRecords
from saip.v1 import common_pb2, tools_pb2
from tests.integration.tools_support import publish_tested, running_tools, tools_client
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration


class CountedGets:
    """The real bucket, counting the reads that go to NATS (every other operation passes through)."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv
        self.gets = 0

    async def get(self, key: str) -> KeyValue.Entry:
        self.gets += 1
        return await self._kv.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kv, name)


@asynccontextmanager
async def watched(nats_client: Any) -> AsyncIterator[tuple[WatchedRecords, CountedGets, KeyValue]]:
    """WatchedRecords over the tools bucket with its watch running, the counted bucket under it, and the bucket itself
    (for writes from outside, as another replica's would be)."""
    js = nats_client.jetstream()
    kv = await jetstream.ensure_kv(js, names.TOOLS_BUCKET, history=5)
    counted = CountedGets(kv)
    records = WatchedRecords(counted, js)  # type: ignore[arg-type]  # the real bucket behind a counter
    async with anyio.create_task_group() as group:
        group.start_soon(records.watch)
        await records.ready()
        yield records, counted, kv
        group.cancel_scope.cancel()


async def test_a_write_is_in_the_copy_before_it_returns_and_reads_need_no_round_trip(nats_client: Any) -> None:
    async with watched(nats_client) as (records, counted, _):
        revision = await records.create("tool.adder", b"first")
        assert await records.get("tool.adder") == (b"first", revision)
        updated = await records.update("tool.adder", b"second", revision)
        assert await records.get("tool.adder") == (b"second", updated)
        assert await records.keys("tool.") == ["tool.adder"]
        await records.delete("tool.adder", updated)
        assert await records.get("tool.adder") is None
        assert await records.keys("tool.") == []
        assert counted.gets == 0


async def test_current_waits_for_every_write_the_bucket_took_before_it_was_asked(nats_client: Any) -> None:
    # What a listing asked by a gateway that saw another replica's write waits for, however far behind the watch is.
    async with watched(nats_client) as (records, counted, kv):
        for n in range(50):
            await kv.put(f"tool.t{n}", b"from another replica")
        await records.current()
        assert await records.keys("tool.") == sorted(f"tool.t{n}" for n in range(50))
        assert counted.gets == 0


async def test_another_writer_s_change_reaches_the_copy_through_the_watch(nats_client: Any) -> None:
    async with watched(nats_client) as (records, counted, kv):
        revision = await kv.put("tool.adder", b"from another replica")
        assert await eventually(lambda: records.get("tool.adder")) == (b"from another replica", revision)
        await kv.put("exposure", b"")  # an all-default record is stored as nothing
        assert await eventually(lambda: records.get("exposure")) == (b"", revision + 1)

        await kv.delete("tool.adder")

        async def gone() -> bool:
            return await records.get("tool.adder") is None

        await eventually(gone)
        assert counted.gets == 0


async def test_until_the_watch_has_read_the_bucket_a_read_goes_to_nats(nats_client: Any) -> None:
    js = nats_client.jetstream()
    kv = await jetstream.ensure_kv(js, names.TOOLS_BUCKET, history=5)
    revision = await kv.put("tool.adder", b"stored before the service started")
    counted = CountedGets(kv)
    records = WatchedRecords(counted, js)  # type: ignore[arg-type]  # the real bucket behind a counter
    assert not records.following
    assert await records.get("tool.adder") == (b"stored before the service started", revision)
    assert counted.gets == 1


def adder(code: str) -> dict[str, Any]:
    return document(code=code)


async def call(stub: Any) -> common_pb2.CallServedToolReply:
    return await stub.CallServedTool(common_pb2.CallServedToolRequest(name="adder", arguments_json='{"a": 1, "b": 2}'))


async def test_a_call_runs_the_current_published_revision_on_both_replicas(nats_server: LocalNats) -> None:
    """A publish or a delete is in force on its replica before it returns; the other replica follows its watch."""
    async with (
        running_tools(nats_server.url) as one,
        running_tools(nats_server.url) as two,
        tools_client(one.port) as first,
        tools_client(two.port) as second,
    ):
        await publish_tested(first, adder("return { sum: a + b };"))
        assert json.loads((await call(first)).text) == {"sum": 3}

        async def second_sees(expected: dict[str, int]) -> bool:
            try:
                return json.loads((await call(second)).text) == expected
            except grpc.aio.AioRpcError:
                return False

        await eventually(lambda: second_sees({"sum": 3}))

        await first.DeleteTool(tools_pb2.DeleteToolRequest(name="adder"))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(first)
        assert refused.value.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)

        await publish_tested(first, adder("return { sum: a + b, twice: 2 * (a + b) };"))
        assert json.loads((await call(first)).text) == {"sum": 3, "twice": 6}
        await eventually(lambda: second_sees({"sum": 3, "twice": 6}))
