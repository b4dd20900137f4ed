"""Traces: OpenTelemetry in every service, with one setup call from its lifespan, and the context carried across gRPC
and NATS, so one `tools/call` is one trace from the gateway through the owning service to the audit collector.

- **Setup.** `traced(settings, nc)`, entered on a lifespan's exit stack after its NATS connection, gives the service
  a `TracerProvider` of its own (resource `service.name` = the service), registered under the service's name:
  `tracer("tools").span(...)` anywhere in the tools service makes a span of that provider, and nothing at all when
  no provider is registered (`tracing.enabled: false`, or a unit test that opened no lifespan). Providers are per
  service, not the process-global one, because the embedded tests run several services in one process and each
  span must say which service made it.
- **Export, off the call path.** Finished spans go to the SDK's `BatchSpanProcessor` (a bounded queue, `QUEUE`
  spans; a span that does not fit is dropped, never waited for), whose thread encodes each batch as OTLP protobuf
  and hands it to the event loop; a task publishes it on `saip.traces.<service>` (core NATS, no ack). The audit
  service keeps the recent traces from there (`saip.audit.traces`). With `OTEL_EXPORTER_OTLP_ENDPOINT` set, a second
  processor also exports over OTLP/HTTP (a trace backend such as Tempo).
- **Propagation.** W3C `traceparent`: `inject()` writes the current span's context into gRPC metadata or NATS
  headers, `extract()` reads it back. `client_interceptors` (a channel's) and the server interceptor
  (`grpc_server`'s) make one span per call on each side; the gateway's audit publisher sends the header with each
  record, and the audit collector continues the trace with its own span.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import grpc
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from saip.common import names, telemetry
from saip.common.settings import SaipSettings

logger = logging.getLogger(__name__)

OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
QUEUE = 4096  # finished spans a process holds before export; past it the SDK drops new ones
BATCH = 512  # spans encoded into one message
DELAY_MS = 200  # how long a finished span may wait for its batch: traces show up within a fraction of a second
PENDING = 256  # encoded batches held while NATS is away (the oldest dropped first)
TRACEPARENT = "traceparent"

_PROPAGATOR = TraceContextTextMapPropagator()
# The tracer of each service set up in this process, made once (a provider's get_tracer costs about as much as a
# span); the last one opened wins (two gateways in one test).
_opened: dict[str, list[trace.Tracer]] = {}
_NOTHING: contextlib.nullcontext[Span] = contextlib.nullcontext(INVALID_SPAN)


class Tracer:
    """The spans of one service: made by the provider its lifespan set up, or nothing when it set none up."""

    def __init__(self, service: str) -> None:
        self.service = service

    def _tracer(self) -> trace.Tracer | None:
        stack = _opened.get(self.service)
        return stack[-1] if stack else None

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, str | int | float | bool] | None = None,
        parent: Context | None = None,
    ) -> contextlib.AbstractContextManager[Span]:
        """A span around a block, current inside it (its children and `inject` see it); an exception escaping the
        block marks it as an error."""
        tracer = self._tracer()
        if tracer is None:
            return _NOTHING
        return tracer.start_as_current_span(name, context=parent, kind=kind, attributes=attributes)

    def record(
        self,
        name: str,
        started_ns: int,
        *,
        parent: Context | None = None,
        attributes: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        """A span of work already done, from `started_ns` (time.time_ns) to now: what a batch step (the audit
        collector's chaining) says of each record it handled."""
        tracer = self._tracer()
        if tracer is not None:
            tracer.start_span(name, context=parent, attributes=attributes, start_time=started_ns).end()


_tracers: dict[str, Tracer] = {}


def tracer(service: str) -> Tracer:
    """The spans of `service` (the name its settings class has)."""
    found = _tracers.get(service)
    if found is None:
        found = _tracers[service] = Tracer(service)
    return found


def current() -> Span:
    """The span now current (a non-recording one when there is none): to add what the call learned on its way."""
    return trace.get_current_span()


def inject(carrier: dict[str, str] | None = None) -> dict[str, str]:
    """`carrier` (a new dict when None) with the current span's `traceparent`, when there is one."""
    carrier = {} if carrier is None else carrier
    if trace.get_current_span().get_span_context().is_valid:
        _PROPAGATOR.inject(carrier)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> Context | None:
    """The context a `traceparent` in `carrier` names, or None when there is none."""
    if not carrier or TRACEPARENT not in carrier:
        return None
    return _PROPAGATOR.extract(dict(carrier))


class NatsSpans(SpanExporter):
    """The span exporter of the embedded default: each batch, encoded as OTLP in the SDK's export thread, is handed
    to the event loop, where `ship` publishes it on saip.traces.<service>; nothing here waits for NATS."""

    def __init__(self, service: str, loop: asyncio.AbstractEventLoop) -> None:
        self._subject = names.TRACES_PREFIX + service
        self._loop = loop
        self._pending: deque[bytes] = deque(maxlen=PENDING)
        self._wake = asyncio.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        payload = encode_spans(spans).SerializeToString()
        try:
            self._loop.call_soon_threadsafe(self._hand, payload)
        except RuntimeError:  # the loop closed on the way out: these spans are lost with the process
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _hand(self, payload: bytes) -> None:
        self._pending.append(payload)
        self._wake.set()

    async def ship(self, nc: NatsClient) -> None:
        """Publish every batch handed over, until cancelled; then the ones still held, as the connection drains."""
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                await self._publish(nc)
        finally:
            await self._publish(nc)

    async def _publish(self, nc: NatsClient) -> None:
        while self._pending:
            payload = self._pending.popleft()
            with contextlib.suppress(NatsError, OSError):  # a batch that cannot be sent is dropped: traces are recent
                await nc.publish(self._subject, payload)


def _resource(service: str) -> Resource:
    return Resource.create({SERVICE_NAME: service, SERVICE_INSTANCE_ID: telemetry.replica()})


def _batched(exporter: SpanExporter) -> BatchSpanProcessor:
    return BatchSpanProcessor(
        exporter, max_queue_size=QUEUE, max_export_batch_size=BATCH, schedule_delay_millis=DELAY_MS
    )


@contextlib.asynccontextmanager
async def traced(settings: SaipSettings, nc: NatsClient) -> AsyncIterator[None]:
    """This service's traces for the lifespan: its provider registered, its spans published over `nc` (and over OTLP
    when OTEL_EXPORTER_OTLP_ENDPOINT is set); on the way out every finished span is exported before NATS drains.
    With `tracing.enabled: false` nothing is set up and every span of the service is a no-op."""
    if not settings.tracing_enabled:
        yield
        return
    service = settings.service
    # A trace is kept or not where it starts (the ratio), and every service it reaches follows the choice the
    # traceparent carries, so a call is traced whole or not at all.
    sampler = ParentBased(TraceIdRatioBased(settings.tracing_sample_ratio))
    provider = TracerProvider(resource=_resource(service), sampler=sampler)
    exporter = NatsSpans(service, asyncio.get_running_loop())
    provider.add_span_processor(_batched(exporter))
    if os.environ.get(OTLP_ENDPOINT):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The endpoint, headers and timeout come from the standard OTEL_EXPORTER_OTLP_* variables.
        provider.add_span_processor(_batched(OTLPSpanExporter()))
        logger.info("traces exported over OTLP", extra={"endpoint": os.environ[OTLP_ENDPOINT]})
    shipping = asyncio.create_task(exporter.ship(nc), name=f"{service}-traces")
    made = provider.get_tracer(f"saip.{service}")
    _opened.setdefault(service, []).append(made)
    try:
        yield
    finally:
        _opened[service].remove(made)
        # The processors' threads flush and stop (the OTLP one bounded by its own timeout); then what they handed
        # over is published.
        await asyncio.to_thread(provider.shutdown)
        shipping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await shipping


def _method(full: str) -> tuple[str, str]:
    """('saip.v1.ToolsService', 'CallServedTool') of '/saip.v1.ToolsService/CallServedTool'."""
    service, _, method = full.lstrip("/").partition("/")
    return service, method


def _rpc_attributes(full: str) -> dict[str, str | int | float | bool]:
    service, method = _method(full)
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def _within_a_trace() -> bool:
    return trace.get_current_span().get_span_context().is_valid


class _ClientSpans(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """One CLIENT span per call made within a trace; its context goes in the call's metadata for the server's span to
    continue. A call outside any trace (a watch's listing, a health probe) is not traced from this side: it would
    only start a trace of its own for every background call."""

    def __init__(self, spans: Tracer) -> None:
        self._spans = spans

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        for key, value in inject().items():
            metadata.add(key, value)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )

    def _span(self, details: grpc.aio.ClientCallDetails) -> contextlib.AbstractContextManager[Span]:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        return self._spans.span(f"grpc {_method(method)[1]}", kind=SpanKind.CLIENT, attributes=_rpc_attributes(method))

    async def intercept_unary_unary(
        self, continuation: Callable[..., Awaitable[Any]], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        if not _within_a_trace():
            return await continuation(details, request)
        with self._span(details) as span:
            call = await continuation(self._details(details), request)  # inside the span: its context is sent
            try:
                await call  # the span covers the answer; the caller's own await gets the same answer
            except grpc.aio.AioRpcError as exc:
                span.set_attribute("rpc.grpc.status_code", exc.code().value[0])
                raise
            return call

    async def intercept_unary_stream(
        self, continuation: Callable[..., Awaitable[Any]], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        if not _within_a_trace():
            return await continuation(details, request)
        # A stream outlives this call: its span is the opening (the server's span covers the whole stream).
        with self._span(details):
            return await continuation(self._details(details), request)


def client_interceptors(service: str) -> list[grpc.aio.ClientInterceptor]:
    """The interceptors of a channel `service` opens to another saip service."""
    return [_ClientSpans(tracer(service))]


class ServerSpans(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """One SERVER span per call (unary calls, server streams, and two-way streams the method writes as it goes: a
    proxied call's progress and questions), continuing the caller's trace from the metadata."""

    def __init__(self, service: str) -> None:
        self._spans = tracer(service)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or (handler.request_streaming and handler.stream_stream is None):
            return handler
        full = handler_call_details.method
        if full.startswith("/grpc.health"):  # probes every few seconds: not a call anyone traces
            return handler
        metadata = {key: value for key, value in handler_call_details.invocation_metadata or () if key == TRACEPARENT}
        name, attributes, spans = f"grpc {_method(full)[1]}", _rpc_attributes(full), self._spans

        @contextlib.contextmanager
        def served(context: grpc.aio.ServicerContext) -> Iterator[Span]:
            with spans.span(name, kind=SpanKind.SERVER, attributes=attributes, parent=extract(metadata)) as span:
                try:
                    yield span
                finally:
                    code = context.code()
                    if code not in (None, grpc.StatusCode.OK):
                        span.set_attribute("rpc.grpc.status_code", code.value[0])
                        span.set_status(Status(StatusCode.ERROR, code.name))

        def awaited(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            """A unary call, or a stream the method writes as it goes (context.write)."""

            async def run(request: Any, context: grpc.aio.ServicerContext) -> Any:
                with served(context):
                    return await method(request, context)

            return run

        def iterated(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
            """A stream the method yields."""

            async def run(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                with served(context):
                    async for item in method(request, context):
                        yield item

            return run

        kinds = (
            (handler.unary_unary, grpc.unary_unary_rpc_method_handler),
            (handler.unary_stream, grpc.unary_stream_rpc_method_handler),
            (handler.stream_stream, grpc.stream_stream_rpc_method_handler),
        )
        for method, rebuild in kinds:
            if method is not None:
                coroutine = method is handler.unary_unary or inspect.iscoroutinefunction(method)
                return rebuild(
                    awaited(method) if coroutine else iterated(method),
                    request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer,
                )
        return handler
