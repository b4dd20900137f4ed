"""Traces: OpenTelemetry in every service, with one setup call from its lifespan, and the context carried across gRPC
and NATS, so one `tools/call` is one trace from the gateway through the owning service to the audit collector.

- **Setup.** `traced(settings, nc)`, entered on a lifespan's exit stack after its NATS connection, opens the
  service's traces, registered under the service's name: `tracer("tools").span(...)` anywhere in the tools service
  makes a span of it, and nothing at all when none is open (`tracing.enabled: false`, or a unit test that opened no
  lifespan). They are per service, not process-global, because the embedded tests run several services in one process
  and each span must say which service made it.
- **Spans of saip's own.** A span is an OpenTelemetry API span (`opentelemetry.trace.Span`: current in the context,
  read by `inject` and by `trace.get_current_span`), but not the SDK's: the SDK's span, made current and ended
  into its batch processor, pays for attribute validation, locks, the sampler and processor chain and `use_span`'s
  generator, and a `tools/call` makes eight. `_Span` keeps a name, two ids, a dict of attributes and two clocks, and
  costs a fraction of it (docs/BENCHMARKS.md, "Tracing on against off"). It records no events: an exception ending a
  span sets its status (`<Type>: <message>`), which is what the traces show.
- **Sampling.** `tracing.sample-ratio` keeps a share of the traces where they start (the trace id's low 64 bits
  against the ratio, as the SDK's `TraceIdRatioBased` does); a span with a parent follows the parent's choice, so a
  call is traced whole or not at all.
- **Export, off the call path, without a thread.** An ended span is appended to its service's queue (a bounded deque,
  `QUEUE` spans, the oldest dropped past it) and nothing more. `DELAY_MS` after the first span into an empty queue
  (an idle service's export sleeps), a task on the event loop takes the queue in slices of `BATCH` spans, encodes
  each slice in one C call (`encode`: JSON rows, a fraction of the OTLP protobuf encoder's cost) and publishes it as
  one message on `saip.traces.<service>` (core NATS, no ack), yielding to the loop between slices. The former design
  encoded OTLP in the SDK's batch thread, which held the GIL beside the calls while it did. The audit service keeps
  the recent traces from there (`saip.audit.traces`, with `decode`). With `OTEL_EXPORTER_OTLP_ENDPOINT` set, each
  slice is also handed, as the SDK's `ReadableSpan`s, to the SDK's batch processor and its OTLP/HTTP exporter (a
  trace backend such as Tempo).
- **Propagation.** W3C `traceparent`: `inject()` writes the current span's context into NATS headers (formatted
  directly: the SDK's propagator took twice as long), `remote()` reads it back as the caller's span context, by the
  SDK's propagator's rules but without its Context (a quarter of its time; a served call and every chained audit
  record read one), and `extract()` gives it as a Context for the API's own functions. A channel
  `channel()` opens makes one CLIENT span per call made within a trace and sends its context in the call's
  metadata, and the server interceptor (`grpc_server`'s, installed only with tracing on) one SERVER span per call,
  continuing it; the channel is not an interceptor because gRPC runs every intercepted call, traced or not, through
  an extra task. The gateway's audit publisher sends the header with each record, and the audit collector continues
  the trace with its own span.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import random
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import grpc
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from saip.common import names, telemetry
from saip.common.interceptors import WrapsOnce
from saip.common.settings import SaipSettings

logger = logging.getLogger(__name__)

OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
QUEUE = 4096  # ended spans a service holds before export; past it the oldest are dropped
BATCH = 64  # spans encoded into one message: one slice of the event loop's time (well under a millisecond)
DELAY_MS = 200  # how long an ended span may wait for its batch: traces show up within a fraction of a second
TRACEPARENT = "traceparent"
FORMAT = 1  # the version of the rows `encode` writes; `decode` refuses any other

# W3C Trace Context's traceparent, as the SDK's propagator reads it: version, trace id, span id, flags, and what a
# later version may add after them (version 00 has nothing after its flags; version ff is forbidden).
_TRACEPARENT_FORMAT = re.compile(r"^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)$")
_TRACEPARENT_LIMIT = 512  # characters, the SDK's bound: a longer value is refused unread
_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_UNSAMPLED = trace.TraceFlags(trace.TraceFlags.DEFAULT)
_NOTHING: contextlib.nullcontext[Span] = contextlib.nullcontext(INVALID_SPAN)
Attributes = Mapping[str, str | int | float | bool]
_KINDS = {kind: kind.name.lower() for kind in SpanKind}  # as a row names them (an Enum's name is a property call)
# Whom a span continues: the current span when None, else a context holding one, or a caller's span context (`remote`).
Parent = Context | SpanContext | None


class _Span(Span):
    """A recording span of saip's own (see the module's docstring): what the traces show of it, and no more."""

    __slots__ = ("_to", "attributes", "context", "end_ns", "error", "kind", "name", "parent_id", "start_ns", "status")

    def __init__(
        self,
        to: _Service,
        name: str,
        context: SpanContext,
        parent_id: int,
        kind: SpanKind,
        attributes: Attributes | None,
        start_ns: int,
    ) -> None:
        self._to = to
        self.name = name
        self.context = context
        self.parent_id = parent_id
        self.kind = kind
        self.attributes: dict[str, AttributeValue] = dict(attributes) if attributes else {}
        self.start_ns = start_ns
        self.end_ns = 0
        self.error = False
        self.status = ""

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return not self.end_ns

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if not self.end_ns:
            self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if not self.end_ns:
            self.attributes.update(attributes)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        code, text = (status.status_code, status.description) if isinstance(status, Status) else (status, description)
        if not self.end_ns and code is not StatusCode.UNSET:
            self.error, self.status = code is StatusCode.ERROR, text or ""

    def update_name(self, name: str) -> None:
        self.name = name

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        """Events are not kept: a span's status says how it ended, its attributes what it learned."""

    def add_link(self, context: SpanContext, attributes: Any = None) -> None:
        """Links are not kept: one call is one trace, each span with one parent."""

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        """Not kept as an event: the exception that ends a span sets its status instead."""

    def end(self, end_time: int | None = None) -> None:
        if not self.end_ns:
            self.end_ns = end_time or time.time_ns()
            self._to.add(self)


class _Current:
    """A span made current around a block, and ended after it: what the SDK's `use_span` does, as a plain class."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> Span:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        otel_context.detach(self._token)
        # As the SDK does: an Exception marks the span; a cancellation (a BaseException) ends it as it stands.
        if isinstance(exc, Exception):
            self._span.set_status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
        self._span.end()


class _Service:
    """The traces of one service while its lifespan runs: how it samples, and the spans ended since the last batch."""

    def __init__(self, service: str, sample_ratio: float, loop: asyncio.AbstractEventLoop) -> None:
        self.service = service
        self.bound = TraceIdRatioBased.get_bound_for_rate(sample_ratio)  # the SDK's rule, without its sampler call
        self.ended: deque[_Span] = deque(maxlen=QUEUE)
        # Set by the first span into an empty queue: an idle service's export sleeps until then, rather than wake
        # every DELAY_MS for nothing (each wake-up is an epoll round and a context switch on a busy machine).
        self.arrived = asyncio.Event()
        self._loop, self._thread = loop, threading.get_ident()

    def add(self, span: _Span) -> None:
        first = not self.ended
        self.ended.append(span)
        if first:
            if threading.get_ident() == self._thread:
                self.arrived.set()
            else:  # a span ended in a worker thread: the event belongs to the loop
                with contextlib.suppress(RuntimeError):  # the loop closed on the way out: the span is lost with it
                    self._loop.call_soon_threadsafe(self.arrived.set)

    def start(self, name: str, kind: SpanKind, attributes: Attributes | None, parent: Parent, start_ns: int) -> Span:
        above = parent if isinstance(parent, SpanContext) else trace.get_current_span(parent).get_span_context()
        span_id = random.getrandbits(64) or 1
        if above.is_valid:
            trace_id, parent_id, sampled = above.trace_id, above.span_id, above.trace_flags.sampled
        else:
            trace_id, parent_id = random.getrandbits(128) or 1, 0
            sampled = (trace_id & TraceIdRatioBased.TRACE_ID_LIMIT) < self.bound
        if not sampled:  # current all the same, so the services the call reaches follow the choice
            return NonRecordingSpan(SpanContext(trace_id, span_id, False, _UNSAMPLED))
        context = SpanContext(trace_id, span_id, False, _SAMPLED)
        return _Span(self, name, context, parent_id, kind, attributes, start_ns)


# The traces of each service opened in this process; the last one opened wins (two gateways in one test).
_opened: dict[str, list[_Service]] = {}


class Tracer:
    """The spans of one service: made while its lifespan has its traces open, nothing otherwise."""

    def __init__(self, service: str) -> None:
        self.service = service

    def _open(self) -> _Service | None:
        stack = _opened.get(self.service)
        return stack[-1] if stack else None

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes | None = None,
        parent: Parent = None,
    ) -> contextlib.AbstractContextManager[Span]:
        """A span around a block, current inside it (its children and `inject` see it); an exception escaping the
        block marks it as an error."""
        opened = self._open()
        if opened is None:
            return _NOTHING
        return _Current(opened.start(name, kind, attributes, parent, time.time_ns()))

    def record(
        self,
        name: str,
        started_ns: int,
        *,
        parent: Parent = None,
        attributes: Attributes | None = None,
    ) -> None:
        """A span of work already done, from `started_ns` (time.time_ns) to now: what a batch step (the audit
        collector's chaining) says of each record it handled."""
        opened = self._open()
        if opened is not None:
            opened.start(name, SpanKind.INTERNAL, attributes, parent, started_ns).end()


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


def traceparent(context: SpanContext) -> str:
    """The W3C `traceparent` of `context` (version 00), as the SDK's propagator writes it, in half its time."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def inject(carrier: dict[str, str] | None = None) -> dict[str, str]:
    """`carrier` (a new dict when None) with the current span's `traceparent`, when there is one."""
    carrier = {} if carrier is None else carrier
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        carrier[TRACEPARENT] = traceparent(context)
    return carrier


def remote(value: str | None) -> SpanContext | None:
    """The caller's span context a `traceparent` value names (the SDK's propagator's rules: see `_TRACEPARENT_FORMAT`),
    or None when it names none; what a span continuing the caller's trace takes as its `parent`."""
    if not value or len(value) > _TRACEPARENT_LIMIT or (match := _TRACEPARENT_FORMAT.match(value)) is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    context = SpanContext(int(trace_id, 16), int(span_id, 16), True, trace.TraceFlags(int(flags, 16)))
    return context if context.is_valid else None


def extract(carrier: Mapping[str, str] | None) -> Context | None:
    """The context a `traceparent` in `carrier` names (its span the caller's, non-recording), or None when there is
    none."""
    caller = remote(carrier.get(TRACEPARENT)) if carrier else None
    return None if caller is None else trace.set_span_in_context(NonRecordingSpan(caller), Context())


def encode(service: str, spans: Sequence[_Span]) -> bytes:
    """One message of `service`'s ended spans: a JSON object whose rows are `[trace id, span id, parent id (empty
    for a root), name, kind, start ns, end ns, error, status, attributes]`, ids in hex as OTLP shows them."""
    rows = [
        [
            f"{span.context.trace_id:032x}",
            f"{span.context.span_id:016x}",
            f"{span.parent_id:016x}" if span.parent_id else "",
            span.name,
            _KINDS[span.kind],
            span.start_ns,
            span.end_ns,
            span.error,
            span.status,
            span.attributes,
        ]
        for span in spans
    ]
    # An attribute JSON cannot carry (an enum, bytes) goes as its text rather than failing the whole batch.
    batch = {"format": FORMAT, "service": service, "spans": rows}
    return json.dumps(batch, separators=(",", ":"), default=str).encode()


def decode(payload: bytes) -> tuple[str, list[list[Any]]]:
    """The service and the rows of one message `encode` wrote (a ValueError when it is not one)."""
    batch = json.loads(payload)
    if not isinstance(batch, dict) or batch.get("format") != FORMAT or not isinstance(batch.get("spans"), list):
        raise ValueError(f"not a span batch of format {FORMAT}")
    return str(batch.get("service", "unknown")), batch["spans"]


class _Otlp:
    """The spans handed to a trace backend over OTLP/HTTP, when OTEL_EXPORTER_OTLP_ENDPOINT is set: each ended span
    as the SDK's ReadableSpan, into the SDK's batch processor (its thread encodes and posts them)."""

    def __init__(self, service: str, exporter: SpanExporter) -> None:
        self._resource = Resource.create({SERVICE_NAME: service, SERVICE_INSTANCE_ID: telemetry.replica()})
        self._scope = InstrumentationScope(f"saip.{service}")
        self._processor = BatchSpanProcessor(
            exporter, max_queue_size=QUEUE, max_export_batch_size=512, schedule_delay_millis=DELAY_MS
        )

    def hand(self, spans: Sequence[_Span]) -> None:
        for span in spans:
            parent = SpanContext(span.context.trace_id, span.parent_id, False, _SAMPLED) if span.parent_id else None
            status = Status(StatusCode.ERROR, span.status) if span.error else Status(StatusCode.UNSET)
            self._processor.on_end(
                ReadableSpan(
                    name=span.name,
                    context=span.context,
                    parent=parent,
                    resource=self._resource,
                    attributes=span.attributes,
                    kind=span.kind,
                    status=status,
                    start_time=span.start_ns,
                    end_time=span.end_ns,
                    instrumentation_scope=self._scope,
                )
            )

    def shutdown(self) -> None:
        self._processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated


async def _publish(opened: _Service, nc: NatsClient, otlp: _Otlp | None) -> None:
    """The spans ended so far, published on saip.traces.<service> a slice at a time (and handed to OTLP)."""
    ended, subject = opened.ended, names.TRACES_PREFIX + opened.service
    while ended:
        spans = [ended.popleft() for _ in range(min(BATCH, len(ended)))]
        if otlp is not None:
            otlp.hand(spans)
        with contextlib.suppress(NatsError, OSError):  # a batch that cannot be sent is dropped: traces are recent
            await nc.publish(subject, encode(opened.service, spans))
        await asyncio.sleep(0)  # the calls waiting on the loop go before the next slice


async def _ship(opened: _Service, nc: NatsClient, otlp: _Otlp | None) -> None:
    """DELAY_MS after the first span into an empty queue, the spans ended since; until cancelled."""
    while True:
        await opened.arrived.wait()
        await asyncio.sleep(DELAY_MS / 1000)
        opened.arrived.clear()  # before the queue is taken: a span ending after that sets it again
        await _publish(opened, nc, otlp)


@contextlib.asynccontextmanager
async def traced(settings: SaipSettings, nc: NatsClient) -> AsyncIterator[None]:
    """This service's traces for the lifespan: its spans made, and published over `nc` (and over OTLP when
    OTEL_EXPORTER_OTLP_ENDPOINT is set); on the way out every ended span is exported before NATS drains. With
    `tracing.enabled: false` nothing is set up and every span of the service is a no-op."""
    if not settings.tracing_enabled:
        yield
        return
    service = settings.service
    opened = _Service(service, settings.tracing_sample_ratio, asyncio.get_running_loop())
    otlp = None
    if os.environ.get(OTLP_ENDPOINT):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The endpoint, headers and timeout come from the standard OTEL_EXPORTER_OTLP_* variables.
        otlp = _Otlp(service, OTLPSpanExporter())
        logger.info("traces exported over OTLP", extra={"endpoint": os.environ[OTLP_ENDPOINT]})
    shipping = asyncio.create_task(_ship(opened, nc, otlp), name=f"{service}-traces")
    _opened.setdefault(service, []).append(opened)
    try:
        yield
    finally:
        _opened[service].remove(opened)
        shipping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await shipping
        await _publish(opened, nc, otlp)  # what is still queued, before the connection drains
        if otlp is not None:  # the SDK's thread posts what it holds (bounded by the exporter's own timeout)
            await asyncio.to_thread(otlp.shutdown)


def _method(full: str) -> tuple[str, str]:
    """('saip.v1.ToolsService', 'CallServedTool') of '/saip.v1.ToolsService/CallServedTool'."""
    service, _, method = full.lstrip("/").partition("/")
    return service, method


def _rpc_attributes(full: str) -> dict[str, str | int | float | bool]:
    service, method = _method(full)
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


class _Calls:
    """One method of a traced channel: a call made within a trace gets a CLIENT span, and its context goes in the
    call's metadata for the server's span to continue. A call outside any trace (a watch's listing, a health probe),
    or in a service whose traces are not open (`tracing.enabled: false`), is the channel's own call, untouched: it
    would only start a trace of its own for every background call.

    A unary call's span covers it until the answer, and says the status code of a failure; a stream's, from its
    opening to its end (its done callback), which is where the server's span ends too."""

    __slots__ = ("_attributes", "_inner", "_name", "_spans", "_unary")

    def __init__(self, inner: Any, method: str, spans: Tracer, *, unary: bool) -> None:
        self._inner, self._spans, self._unary = inner, spans, unary
        self._name, self._attributes = f"grpc {_method(method)[1]}", _rpc_attributes(method)

    def __call__(self, request: Any, *, metadata: Sequence[tuple[str, str]] | None = None, **options: Any) -> Any:
        opened = self._spans._open()
        if opened is None or not trace.get_current_span().get_span_context().is_valid:
            return self._inner(request, metadata=metadata, **options)
        if self._unary:
            return self._answered(request, metadata, options)
        span = opened.start(self._name, SpanKind.CLIENT, self._attributes, None, time.time_ns())
        call = self._inner(request, metadata=self._carrying(span, metadata), **options)
        call.add_done_callback(lambda _: span.end())
        return call

    async def _answered(self, request: Any, metadata: Sequence[tuple[str, str]] | None, options: Any) -> Any:
        with self._spans.span(self._name, kind=SpanKind.CLIENT, attributes=self._attributes) as span:
            try:
                return await self._inner(request, metadata=self._carrying(span, metadata), **options)
            except grpc.aio.AioRpcError as exc:
                span.set_attribute("rpc.grpc.status_code", exc.code().value[0])
                raise

    @staticmethod
    def _carrying(span: Span, metadata: Sequence[tuple[str, str]] | None) -> tuple[tuple[str, str], ...]:
        return ((TRACEPARENT, traceparent(span.get_span_context())), *(metadata or ()))


class _Channel(grpc.aio.Channel):  # type: ignore[misc]  # grpc's aio types are partly unannotated
    """A grpc.aio channel whose calls are traced by `_Calls`, in place of a client interceptor: gRPC runs every call
    of an intercepted channel, traced or not, through an extra task and a second call object, which (with the server's
    interceptor) cost an untraced call 0.29 ms of CPU and a traced one 0.07 ms more than this does (docs/BENCHMARKS.md,
    "Tracing on against off", the 21:53 run)."""

    def __init__(self, channel: grpc.aio.Channel, spans: Tracer) -> None:
        self._channel, self._spans = channel, spans

    async def __aenter__(self) -> _Channel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._channel.close()

    async def close(self, grace: float | None = None) -> None:
        await self._channel.close(grace)

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._channel.channel_ready()

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Calls(self._channel.unary_unary(method, *args, **kwargs), method, self._spans, unary=True)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Calls(self._channel.unary_stream(method, *args, **kwargs), method, self._spans, unary=False)

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Calls(self._channel.stream_unary(method, *args, **kwargs), method, self._spans, unary=False)

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return _Calls(self._channel.stream_stream(method, *args, **kwargs), method, self._spans, unary=False)


def channel(service: str, target: str, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """An insecure channel `service` opens to another saip service at `target`, its calls within a trace traced."""
    return _Channel(grpc.aio.insecure_channel(target, options=options), tracer(service))


def _caller(context: grpc.aio.ServicerContext) -> SpanContext | None:
    """The caller's span context from a served call's `traceparent`, or None when it sent none."""
    for key, value in context.invocation_metadata() or ():
        if key == TRACEPARENT:
            return remote(value)
    return None


def _served_status(span: Span, context: grpc.aio.ServicerContext) -> None:
    code = context.code()
    if code not in (None, grpc.StatusCode.OK):
        span.set_attribute("rpc.grpc.status_code", code.value[0])
        span.set_status(Status(StatusCode.ERROR, code.name))


class ServerSpans(WrapsOnce):
    """One SERVER span per call (unary calls, server streams, and two-way streams the method writes as it goes: a
    proxied call's progress and questions), continuing the caller's trace from the metadata. Each method's traced
    handler is built once, at its first call, not per call (gRPC asks the interceptor at every call)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self._spans = tracer(service)

    def wrap(self, full: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """`handler` with a span around each of its calls (the same handler when its calls are not traced)."""
        if handler.request_streaming and handler.stream_stream is None:
            return handler
        if full.startswith("/grpc.health"):  # probes every few seconds: not a call anyone traces
            return handler
        name, attributes, spans = f"grpc {_method(full)[1]}", _rpc_attributes(full), self._spans

        def awaited(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            """A unary call, or a stream the method writes as it goes (context.write)."""

            async def run(request: Any, context: grpc.aio.ServicerContext) -> Any:
                with spans.span(name, kind=SpanKind.SERVER, attributes=attributes, parent=_caller(context)) as span:
                    try:
                        return await method(request, context)
                    finally:
                        _served_status(span, context)

            return run

        def iterated(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
            """A stream the method yields."""

            async def run(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                with spans.span(name, kind=SpanKind.SERVER, attributes=attributes, parent=_caller(context)) as span:
                    try:
                        async for item in method(request, context):
                            yield item
                    finally:
                        _served_status(span, context)

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
