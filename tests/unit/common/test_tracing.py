"""saip.common.tracing: a service's spans exist only once its lifespan set tracing up, go out on
saip.traces.<service> as batches of rows (off the call path, a slice at a time from the event loop) and over OTLP to a
trace backend when OTEL_EXPORTER_OTLP_ENDPOINT is set, carry their context in `traceparent`, and are no-ops with
`tracing.enabled: false`."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import ClassVar

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from saip.common import tracing
from tests.http_origin import QuietHandler, http_origin
from tests.spans import ProbeSettings, Published
from tests.waiting import eventually


def names(published: Published) -> list[str]:
    return [row[3] for row in published.rows()]


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


def test_a_traceparent_is_read_as_w3c_trace_context_writes_it() -> None:
    trace_id, span_id = "ab" * 16, "cd" * 8
    for header, flags in ((f"00-{trace_id}-{span_id}-01", 1), (f" 00-{trace_id}-{span_id}-00\t", 0)):
        found = trace.get_current_span(tracing.extract({tracing.TRACEPARENT: header})).get_span_context()
        assert (found.trace_id, found.span_id, found.trace_flags, found.is_remote) == (
            int(trace_id, 16),
            int(span_id, 16),
            flags,
            True,
        )
    later = tracing.extract({tracing.TRACEPARENT: f"01-{trace_id}-{span_id}-01-what-a-later-version-adds"})
    assert trace.get_current_span(later).get_span_context().trace_id == int(trace_id, 16)
    for malformed in (
        f"00-{trace_id}-{span_id}-01-more",  # version 00 has four fields
        f"ff-{trace_id}-{span_id}-01",  # the version W3C forbids
        f"00-{trace_id.upper()}-{span_id}-01",  # hex is lowercase
        f"00-{'0' * 32}-{span_id}-01",  # an all-zero id is no id
        f"00-{trace_id}-{'0' * 16}-01",
        f"00-{trace_id}-{span_id[:-1]}-01",
        f"01-{trace_id}-{span_id}-01x",
        "",
    ):
        parent = trace.get_current_span(tracing.extract({tracing.TRACEPARENT: malformed}))
        assert not parent.get_span_context().is_valid, malformed


def test_a_traceparent_is_read_by_the_sdk_propagator_s_rules_without_it() -> None:
    trace_id, span_id = "ab" * 16, "cd" * 8
    propagator = TraceContextTextMapPropagator()
    for header in (
        f"00-{trace_id}-{span_id}-01",
        f"00-{trace_id}-{span_id}-00",
        f" 00-{trace_id}-{span_id}-01\t",
        f"01-{trace_id}-{span_id}-01-what-a-later-version-adds",
        f"00-{trace_id}-{span_id}-01-more",
        f"ff-{trace_id}-{span_id}-01",
        f"00-{trace_id.upper()}-{span_id}-01",
        f"00-{'0' * 32}-{span_id}-01",
        f"00-{trace_id}-{'0' * 16}-01",
        f"00-{trace_id}-{span_id}-0",
        f"01-{trace_id}-{span_id}-01-" + "x" * 512,  # past the length the SDK reads
        f"00-{trace_id}-{span_id}-01\n",
        "",
    ):
        sdk = trace.get_current_span(propagator.extract({tracing.TRACEPARENT: header})).get_span_context()
        assert tracing.remote(header) == (sdk if sdk.is_valid else None), header
    assert tracing.remote(None) is None


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
            async with tracing.channel("probe", f"127.0.0.1:{port}") as channel:
                call = channel.stream_stream("/saip.v1.Probe/Both")(iter([b"one", b"two"]))
                assert [reply async for reply in call] == [b"ONE", b"TWO"]  # outside a trace: the server's span only
                with tracing.tracer("probe").span("root"):
                    call = channel.stream_stream("/saip.v1.Probe/Both")(iter([b"three"]))
                    assert [reply async for reply in call] == [b"THREE"]
        finally:
            await server.stop(None)
    untraced, *traced = published.rows()
    assert untraced[3:5] == ["grpc Both", "server"] and not untraced[2]
    spans = {row[4]: row for row in traced if row[3] == "grpc Both"}
    assert spans["server"][2] == spans["client"][1]  # the stream joined the caller's trace
    assert spans["client"][5] <= spans["server"][5] <= spans["server"][6] <= spans["client"][6]


def _sent(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """What the caller sent as its traceparent (empty for none)."""
    return dict(context.invocation_metadata() or ()).get(tracing.TRACEPARENT, "").encode()


async def _unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    if request == b"refuse":
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "refused")
    return _sent(request, context)


async def _streamed(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    yield _sent(request, context)
    yield b"end"


@contextlib.asynccontextmanager
async def probe_server(spans: tracing.ServerSpans | None) -> AsyncIterator[grpc.aio.Channel]:
    """A served probe (`Unary`: the traceparent it received, FAILED_PRECONDITION for b"refuse"; `Streamed`: the
    traceparent, then b"end"), and a traced channel of the service `probe` to it."""
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary),
        "Streamed": grpc.unary_stream_rpc_method_handler(_streamed),
    }
    server = grpc.aio.server(interceptors=[spans] if spans is not None else [])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("saip.v1.Probe", handlers)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with tracing.channel("probe", f"127.0.0.1:{port}") as channel:
            yield channel
    finally:
        await server.stop(None)


async def test_a_call_within_a_trace_carries_its_client_span_s_context_to_the_server_s_span() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        async with probe_server(tracing.ServerSpans("probe")) as channel:
            unary, streamed = (
                channel.unary_unary("/saip.v1.Probe/Unary"),
                channel.unary_stream("/saip.v1.Probe/Streamed"),
            )
            with tracing.tracer("probe").span("root") as root:
                sent = (await unary(b"x")).decode()
                assert [item async for item in streamed(b"x")][1:] == [b"end"]
                with pytest.raises(grpc.aio.AioRpcError):
                    await unary(b"refuse")
            assert await unary(b"outside") == b""  # outside any trace: no context sent, the server's span is a root
        await eventually(lambda: len(published.rows()) == 8 or None)

    trace_id = f"{root.get_span_context().trace_id:032x}"
    clients = [row for row in published.rows() if row[4] == "client"]
    servers = [row for row in published.rows() if row[4] == "server"]
    assert [row[3] for row in clients] == ["grpc Unary", "grpc Streamed", "grpc Unary"]
    assert all(row[0] == trace_id and row[2] == f"{root.get_span_context().span_id:016x}" for row in clients)
    assert sent == f"00-{trace_id}-{clients[0][1]}-01"  # the client span is the server span's parent
    assert sorted(row[2] for row in servers if row[0] == trace_id) == sorted(row[1] for row in clients)
    assert [row[2] for row in servers if row[0] != trace_id] == [""]
    assert clients[2][9]["rpc.grpc.status_code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    refused = next(row for row in servers if row[2] == clients[2][1])
    assert refused[7] is True and refused[9]["rpc.grpc.status_code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]


async def test_without_open_traces_a_channel_s_calls_carry_no_context() -> None:
    async with probe_server(None) as channel:
        with tracing.tracer("probe").span("nothing"):
            assert await channel.unary_unary("/saip.v1.Probe/Unary")(b"x") == b""


async def test_a_served_method_s_traced_handler_is_built_once() -> None:
    spans = tracing.ServerSpans("probe")
    async with tracing.traced(ProbeSettings.load(), Published()), probe_server(spans) as channel:  # type: ignore[arg-type]
        unary = channel.unary_unary("/saip.v1.Probe/Unary")
        with tracing.tracer("probe").span("root"):
            await unary(b"x")
            built = dict(spans._wrapped)
            await unary(b"x")
    assert list(built) == ["/saip.v1.Probe/Unary"] and spans._wrapped == built


async def test_a_row_says_what_the_span_was_and_how_it_ended() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        spans = tracing.tracer("probe")
        with spans.span("outer", kind=SpanKind.SERVER, attributes={"saip.tool": "adder"}) as outer:
            with pytest.raises(RuntimeError), spans.span("inner"):
                tracing.current().set_attribute("saip.ok", False)
                raise RuntimeError("the sandbox ran out of time")
            outer.set_attribute("saip.outcome", "ERROR")
        assert not outer.is_recording()  # ended: what is set now is not kept
        outer.set_attribute("late", "ignored")

    assert {tracing.decode(payload)[0] for _, payload in published.messages} == {"probe"}
    inner, root = published.rows()
    trace_id, span_id = f"{outer.get_span_context().trace_id:032x}", f"{outer.get_span_context().span_id:016x}"
    assert root[:5] == [trace_id, span_id, "", "outer", "server"]
    assert root[7:] == [False, "", {"saip.tool": "adder", "saip.outcome": "ERROR"}]
    assert inner[:5] == [trace_id, inner[1], span_id, "inner", "internal"]
    assert inner[7:] == [True, "RuntimeError: the sandbox ran out of time", {"saip.ok": False}]
    assert root[5] <= inner[5] <= inner[6] <= root[6]


async def test_spans_go_out_one_message_per_slice_of_at_most_a_batch() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        for index in range(tracing.BATCH * 2 + 1):
            tracing.tracer("probe").record(f"step {index}", 0)
    sizes = [len(tracing.decode(payload)[1]) for _, payload in published.messages]
    assert sizes == [tracing.BATCH, tracing.BATCH, 1]
    assert names(published) == [f"step {index}" for index in range(tracing.BATCH * 2 + 1)]


async def test_spans_ended_after_an_idle_spell_go_out_while_the_lifespan_runs() -> None:
    published = Published()

    async def sent(name: str) -> None:
        tracing.tracer("probe").record(name, 0)
        await eventually(lambda: name in names(published) or None)

    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        for name in ("first", "after the export went idle", "and once more"):
            await sent(name)
    assert names(published) == ["first", "after the export went idle", "and once more"]


async def test_a_span_ended_in_a_worker_thread_goes_out_too() -> None:
    published = Published()

    def worker() -> None:
        tracing.tracer("probe").record("in a thread", 0)

    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        await asyncio.to_thread(worker)
        await eventually(lambda: names(published) or None)
    assert names(published) == ["in a thread"]


async def test_an_attribute_json_cannot_carry_goes_as_its_text() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        with tracing.tracer("probe").span("odd") as span:
            span.set_attribute("saip.kind", SpanKind.SERVER)  # type: ignore[arg-type]
    ((*_, attributes),) = published.rows()
    assert attributes == {"saip.kind": str(SpanKind.SERVER)}


def test_a_message_that_is_not_a_batch_is_refused() -> None:
    for payload in (b"\x0a\x02", b"[]", b'{"format": 0, "spans": []}'):
        with pytest.raises(ValueError):
            tracing.decode(payload)


class Collector(QuietHandler):
    """A trace backend's OTLP/HTTP receiver: each POSTed request kept, answered 200."""

    received: ClassVar[list[ExportTraceServiceRequest]] = []
    arrived: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append(ExportTraceServiceRequest.FromString(body))
        # Before the answer: the exporter returns as soon as it has the answer, and the test looks right after.
        self.arrived.set()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


async def test_with_an_otlp_endpoint_the_same_spans_also_go_to_the_trace_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    published = Published()
    with http_origin(Collector) as origin:
        monkeypatch.setenv(tracing.OTLP_ENDPOINT, origin)
        async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
            spans = tracing.tracer("probe")
            with (
                spans.span("outer", attributes={"saip.tool": "adder"}) as outer,
                spans.span("inner", kind=SpanKind.CLIENT),
            ):
                pass
        assert Collector.arrived.is_set()  # the lifespan's end waits for the SDK's thread to post what it holds
    exported = {
        span.name: (span, resource.resource)
        for request in Collector.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    }
    (outer_span, resource), (inner_span, _) = exported["outer"], exported["inner"]
    assert names(published) == ["inner", "outer"]
    assert outer_span.trace_id == inner_span.trace_id == outer.get_span_context().trace_id.to_bytes(16, "big")
    assert inner_span.parent_span_id == outer_span.span_id and not outer_span.parent_span_id
    assert inner_span.kind == inner_span.SPAN_KIND_CLIENT
    assert {pair.key: pair.value.string_value for pair in outer_span.attributes} == {"saip.tool": "adder"}
    assert {"service.name": "probe"}.items() <= {
        pair.key: pair.value.string_value for pair in resource.attributes
    }.items()
