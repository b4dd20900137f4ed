"""No request leaves server-side state behind, and health says when Tool Studio cannot serve: 5,000 listings (READ
calls, no question) against the real tools service on a real nats-server leave the JetStream consumer count where
it was (a key listing through `kv.keys()` would leave an ephemeral consumer for 300 s each, until the account's limit
took Tool Studio down), the watched keys that stand for such listings show every write as soon as it returns, and a
service cut off from NATS answers NOT_SERVING until it is back (its liveness SERVING throughout)."""

from __future__ import annotations

import anyio
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.aio.client import Client as NatsClient

from saip.common import jetstream, names
from saip.common.grpc_server import LIVENESS
from saip.common.natsd import LocalNats
from saip.tools.clients import HISTORY, WatchedRecords
from saip.v1 import tools_pb2
from tests.integration.tools_support import publish_tested, running_tools, tools_client
from tests.unit.tools.specs import document
from tests.waiting import eventually

CALLS = 5000
AT_ONCE = 50


async def consumers(nats_client: NatsClient) -> int:
    info = await nats_client.jetstream().stream_info(f"KV_{names.TOOLS_BUCKET}")
    return int(info.state.consumer_count)


async def status(port: int, service: str = "") -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)  # type: ignore[no-untyped-call]
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2.0)
        return int(reply.status)


async def test_five_thousand_listings_leave_no_consumer_and_the_service_still_answers(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    async with running_tools(nats_server.url) as app, tools_client(app.port) as stub:
        await publish_tested(stub, document("adder"))
        before = await consumers(nats_client)
        listed: list[int] = []

        async def lister() -> None:
            for _ in range(CALLS // AT_ONCE):
                reply = await stub.ListTools(tools_pb2.ListToolsRequest())
                listed.append(len(reply.tools))

        async with anyio.create_task_group() as group:
            for _ in range(AT_ONCE):
                group.start_soon(lister)
        assert listed == [1] * CALLS
        assert await consumers(nats_client) == before
        # Still answering, reads and writes alike, and still healthy.
        await publish_tested(stub, document("second"))
        names_listed = [tool.name for tool in (await stub.ListTools(tools_pb2.ListToolsRequest())).tools]
        assert sorted(names_listed) == ["adder", "second"]
        assert await status(app.port) == health_pb2.HealthCheckResponse.SERVING


async def test_health_says_not_serving_while_nats_is_away(nats_server: LocalNats) -> None:
    async with running_tools(nats_server.url) as app, tools_client(app.port) as stub:
        assert await status(app.port) == health_pb2.HealthCheckResponse.SERVING
        nats_server.kill()
        await eventually(lambda: _status_is(app.port, health_pb2.HealthCheckResponse.NOT_SERVING), within=30)
        # Out of the Service, not restarted: the liveness probe's name still says SERVING.
        assert await status(app.port, LIVENESS) == health_pb2.HealthCheckResponse.SERVING
        nats_server.start()
        await eventually(lambda: _status_is(app.port, health_pb2.HealthCheckResponse.SERVING), within=30)
        # Back: the watch started over, so a write is listed again.
        await publish_tested(stub, document("after"))
        assert [tool.name for tool in (await stub.ListTools(tools_pb2.ListToolsRequest())).tools] == ["after"]


async def _status_is(port: int, wanted: int) -> bool:
    return await status(port) == wanted


async def test_the_watched_keys_show_each_write_as_soon_as_it_returns(nats_client: NatsClient) -> None:
    js = nats_client.jetstream()
    kv = await jetstream.ensure_kv(js, names.TOOLS_BUCKET, history=HISTORY)
    records = WatchedRecords(kv, js)
    async with anyio.create_task_group() as group:
        group.start_soon(records.watch)
        await records.ready()
        assert await records.keys("tool.") == []
        revision = await records.create("tool.a", b"one")
        assert await records.keys("tool.") == ["tool.a"]
        await records.update("tool.a", b"two", revision)
        await records.create("exposure", b"")
        assert (await records.keys("tool."), await records.keys("")) == (["tool.a"], ["exposure", "tool.a"])
        stored = await records.get("tool.a")
        assert stored is not None
        await records.delete("tool.a", stored[1])
        assert await records.keys("tool.") == []
        assert records.following
        group.cancel_scope.cancel()
