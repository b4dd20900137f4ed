"""saip.common.tracing: a service's spans exist only once its lifespan set tracing up, go out on
saip.traces.<service> as OTLP when it ends (off the call path, through the batch processor), carry their context in
`traceparent`, and are no-ops with `tracing.enabled: false`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from saip.common import tracing
from saip.common.settings import SaipSettings


class ProbeSettings(SaipSettings):
    service: ClassVar[str] = "probe"


class Published:
    """The one thing tracing needs of a NATS connection: a core publish."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes) -> None:
        self.messages.append((subject, payload))


def names(published: Published) -> list[str]:
    return [
        span.name
        for _, payload in published.messages
        for resource in ExportTraceServiceRequest.FromString(payload).resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def test_without_a_lifespan_a_span_records_nothing_and_sends_no_context() -> None:
    with tracing.tracer("probe").span("nothing") as span:
        assert not span.is_recording()
        assert tracing.inject() == {}
    assert tracing.extract({}) is None


async def test_a_lifespan_s_spans_go_out_on_its_subject_as_otlp() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        with tracing.tracer("probe").span("outer", attributes={"saip.tool": "adder"}) as outer:
            carried = tracing.inject({"Nats-Msg-Id": "r-1"})
        with tracing.tracer("probe").span("continued", parent=tracing.extract(carried)) as continued:
            assert continued.get_span_context().trace_id == outer.get_span_context().trace_id
    assert carried["Nats-Msg-Id"] == "r-1" and carried[tracing.TRACEPARENT].startswith("00-")
    assert {subject for subject, _ in published.messages} == {"saip.traces.probe"}
    assert sorted(names(published)) == ["continued", "outer"]


async def test_with_tracing_off_nothing_is_made_or_sent() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(tracing_enabled=False), published):  # type: ignore[arg-type]
        with tracing.tracer("probe").span("nothing") as span:
            assert not span.is_recording()
    assert published.messages == []


async def test_a_trace_is_kept_or_left_out_where_it_starts_and_the_services_it_reaches_follow() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(tracing_sample_ratio=0.0), published):  # type: ignore[arg-type]
        with tracing.tracer("probe").span("left out") as root:
            assert not root.is_recording()
    kept = {tracing.TRACEPARENT: "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}  # a caller that keeps its trace
    async with tracing.traced(ProbeSettings.load(tracing_sample_ratio=0.0), published):  # type: ignore[arg-type]
        with tracing.tracer("probe").span("followed", parent=tracing.extract(kept)) as child:
            assert child.is_recording()
    assert names(published) == ["followed"]


async def test_a_two_way_stream_the_method_writes_gets_its_server_span() -> None:
    async def both(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> None:
        async for request in requests:
            await context.write(request.upper())

    handler = grpc.stream_stream_rpc_method_handler(both)
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        server = grpc.aio.server(interceptors=[tracing.ServerSpans("probe")])
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("saip.v1.Probe", {"Both": handler})])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.stream_stream("/saip.v1.Probe/Both")(iter([b"one", b"two"]))
                assert [reply async for reply in call] == [b"ONE", b"TWO"]
        finally:
            await server.stop(None)
    assert names(published) == ["grpc Both"]
