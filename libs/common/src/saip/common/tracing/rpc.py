"""Traced gRPC. A channel `channel()` opens makes one CLIENT span per call made within a trace and sends its context
in the call's metadata, and the server interceptor (`grpc_server`'s, installed only with tracing on) one SERVER span
per call, continuing it. The channel is not an interceptor because gRPC runs every intercepted call, traced or not,
through an extra task."""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import grpc
from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode

from saip.common.interceptors import WrapsOnce
from saip.common.tracing.propagation import TRACEPARENT, remote, traceparent
from saip.common.tracing.spans import Tracer, tracer


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
        opened = self._spans.opened()
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
    of an intercepted channel, traced or not, through an extra task and a second call object, which would cost every
    call, traced or not, CPU this wrapper does not spend (docs/BENCHMARKS.md, "Tracing on against off")."""

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
