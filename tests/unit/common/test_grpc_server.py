"""The gRPC server every service runs: a taken port is said plainly, and the RPC edge turns errors into statuses
(a service's own error keeps its sentence; anything else is INTERNAL and its message stays in the log)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import grpc
import httpx
import pytest
from prometheus_client import CollectorRegistry

from saip.common.grpc_server import GrpcServer, RpcEdge, _Metrics, endpoints
from saip.common.metrics import GrpcMetrics
from saip.common.settings import Port, SaipSettings, service_keys
from saip.common.tracing import ServerSpans
from saip.v1 import common_pb2


class ServiceError(Exception):
    pass


class NotThere(ServiceError):
    pass


class ProbeSettings(SaipSettings):
    service: ClassVar[str] = "probe"
    keys: ClassVar[Mapping[str, str]] = service_keys(endpoint="probe", own={})

    probe_host: str = "127.0.0.1"
    probe_port: Port = 0
    probe_metrics_port: Port = 0


NOTE = "admin token: send it"
EDGE = RpcEdge("probe", ServiceError, {NotThere: grpc.StatusCode.NOT_FOUND})


class Servicer:
    @EDGE.unary
    async def List(self, request: common_pb2.ListServedToolsRequest, context: Any) -> common_pb2.ListServedToolsReply:
        raise NotThere("No tool 'x'; call ListServedTools for the names.")

    @EDGE.unary
    async def Call(self, request: common_pb2.CallServedToolRequest, context: Any) -> common_pb2.CallServedToolReply:
        if request.name:
            raise NotThere(f"No tool '{request.name}' (the {NOTE}); call ListServedTools for the names.")
        raise RuntimeError("secret detail sk-live-123456")

    @EDGE.streaming
    async def Stream(
        self, request: common_pb2.ListServedToolsRequest, context: Any
    ) -> AsyncIterator[common_pb2.ListServedToolsReply]:
        yield common_pb2.ListServedToolsReply()
        raise ServiceError("The stream ended: the tail was too slow.")


def register(server: grpc.aio.Server) -> None:
    servicer = Servicer()
    handlers = {
        "List": grpc.unary_unary_rpc_method_handler(
            servicer.List,
            request_deserializer=common_pb2.ListServedToolsRequest.FromString,
            response_serializer=common_pb2.ListServedToolsReply.SerializeToString,
        ),
        "Call": grpc.unary_unary_rpc_method_handler(
            servicer.Call,
            request_deserializer=common_pb2.CallServedToolRequest.FromString,
            response_serializer=common_pb2.CallServedToolReply.SerializeToString,
        ),
        "Stream": grpc.unary_stream_rpc_method_handler(
            servicer.Stream,
            request_deserializer=common_pb2.ListServedToolsRequest.FromString,
            response_serializer=common_pb2.ListServedToolsReply.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("saip.v1.Probe", handlers)])


@asynccontextmanager
async def probe() -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the probe service, served until the block ends."""
    server = GrpcServer([("saip.v1.Probe", register)], "127.0.0.1", 0)
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        await server.stop(0)


def call_of(channel: grpc.aio.Channel) -> grpc.aio.UnaryUnaryMultiCallable[Any, Any]:
    return channel.unary_unary(
        "/saip.v1.Probe/Call",
        request_serializer=common_pb2.CallServedToolRequest.SerializeToString,
        response_deserializer=common_pb2.CallServedToolReply.FromString,
    )


async def test_errors_leave_the_service_as_statuses() -> None:
    async with probe() as channel:
        listing = channel.unary_unary(
            "/saip.v1.Probe/List",
            request_serializer=common_pb2.ListServedToolsRequest.SerializeToString,
            response_deserializer=common_pb2.ListServedToolsReply.FromString,
        )
        calling = call_of(channel)
        streaming = channel.unary_stream(
            "/saip.v1.Probe/Stream",
            request_serializer=common_pb2.ListServedToolsRequest.SerializeToString,
            response_deserializer=common_pb2.ListServedToolsReply.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await listing(common_pb2.ListServedToolsRequest())
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        assert refused.value.details() == "No tool 'x'; call ListServedTools for the names."

        # A refusal that quotes the request leaves masked where it quotes it, as the audit trail masks the
        # request (in every service: this is their one RPC edge); the service's own words stay as they are.
        with pytest.raises(grpc.aio.AioRpcError) as quoted:
            await calling(common_pb2.CallServedToolRequest(name="password=hunter2"))
        assert quoted.value.details() == f"No tool 'password=***' (the {NOTE}); call ListServedTools for the names."

        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await calling(common_pb2.CallServedToolRequest())
        assert failed.value.code() == grpc.StatusCode.INTERNAL
        assert failed.value.details() == "unexpected error in the probe service; see its log"

        received = []
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            async for reply in streaming(common_pb2.ListServedToolsRequest()):
                received.append(reply)  # noqa: PERF401 - the replies before the error must be kept
        assert len(received) == 1
        assert ended.value.code() == grpc.StatusCode.INTERNAL  # ServiceError itself is not in the table
        assert ended.value.details() == "The stream ended: the tail was too slow."


async def test_a_refusal_quoting_a_long_input_arrives_as_the_sentence_cut_to_fit() -> None:
    # Whole, it would be gRPC's "metadata size exceeds hard limit" at the client: 16 KiB of details at most.
    async with probe() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as long_name:
            await call_of(channel)(common_pb2.CallServedToolRequest(name="a" * 100_000))
        with pytest.raises(grpc.aio.AioRpcError) as long_words:
            await call_of(channel)(common_pb2.CallServedToolRequest(name="名 " * 50_000))
    assert long_name.value.code() == long_words.value.code() == grpc.StatusCode.NOT_FOUND
    assert long_name.value.details() == (
        f"No tool '{'a' * 60}… (100000 characters)' (the {NOTE}); call ListServedTools for the names."
    )
    cut = long_words.value.details()
    assert cut.startswith("No tool '名 名") and cut.endswith(f"名 ' (the {NOTE}); call ListServedTools for the names.")
    assert " … " in cut and len(cut.encode()) < 4 * 1024


async def test_a_taken_port_is_said_with_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot serve gRPC on 127.0.0.1:{port}"):
            await GrpcServer([], "127.0.0.1", port).start()


async def list_nothing(channel: grpc.aio.Channel) -> None:
    """One call of the probe's List, which refuses it (NOT_FOUND)."""
    listing = channel.unary_unary(
        "/saip.v1.Probe/List",
        request_serializer=common_pb2.ListServedToolsRequest.SerializeToString,
        response_deserializer=common_pb2.ListServedToolsReply.FromString,
    )
    with pytest.raises(grpc.aio.AioRpcError):
        await listing(common_pb2.ListServedToolsRequest())


async def test_the_endpoints_count_calls_on_the_given_registry_and_drain_on_the_way_out() -> None:
    registry = CollectorRegistry()
    drained: list[str] = []
    async with endpoints(
        ProbeSettings.load(),
        [("saip.v1.Probe", register)],
        registry=registry,
        grace=1.0,
        draining=lambda: drained.append("tails ended"),
    ) as served:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{served.port}") as channel:
            await list_nothing(channel)
        async with httpx.AsyncClient() as http:
            exported = (await http.get(f"http://127.0.0.1:{served.metrics_port}/metrics")).text
        assert drained == []
    labels = {"grpc_service": "saip.v1.Probe", "grpc_method": "List", "grpc_code": "NOT_FOUND"}
    assert registry.get_sample_value("saip_grpc_server_handled_total", labels) == 1
    assert 'saip_build_info{service="probe"' in exported
    assert drained == ["tails ended"]


async def test_a_method_s_timed_and_traced_handlers_are_built_at_its_first_call_and_count_every_call() -> None:
    # The metrics interceptor inside the spans one, as every service has them: a handler made anew per call by the
    # inner one made the outer one build its own again each time.
    registry = CollectorRegistry()
    spans = ServerSpans("probe")
    server = grpc.aio.server(interceptors=[spans, _Metrics(GrpcMetrics(registry))])
    register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await list_nothing(channel)
            first = dict(spans._wrapped)
            await list_nothing(channel)
    finally:
        await server.stop(None)
    assert list(first) == ["/saip.v1.Probe/List"]
    assert spans._wrapped["/saip.v1.Probe/List"] is first["/saip.v1.Probe/List"]
    labels = {"grpc_service": "saip.v1.Probe", "grpc_method": "List", "grpc_code": "NOT_FOUND"}
    assert registry.get_sample_value("saip_grpc_server_handled_total", labels) == 2
    assert (
        registry.get_sample_value(
            "saip_grpc_server_handling_seconds_count", {"grpc_service": "saip.v1.Probe", "grpc_method": "List"}
        )
        == 2
    )
