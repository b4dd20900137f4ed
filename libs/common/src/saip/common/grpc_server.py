"""A grpc.aio server with the standard health service, reflection and per-RPC metrics, stopped gracefully; and the
RPC edge where a service's errors become gRPC statuses."""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from saip.common.interceptors import WrapsOnce
from saip.common.masking import mask_quoted
from saip.common.metrics import GrpcMetrics, MetricsServer, publish_build_info
from saip.common.settings import SaipSettings
from saip.common.tracing import ServerSpans

logger = logging.getLogger(__name__)

Registrar = Callable[[grpc.aio.Server], None]


class _Metrics(WrapsOnce):
    """Counts every call by its final status code and times unary calls (request rate, errors, latency)."""

    def __init__(self, metrics: GrpcMetrics) -> None:
        super().__init__()
        self._metrics = metrics

    def wrap(self, full: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        if handler.unary_unary is None:
            return handler
        _, _, path = full.partition("/")
        service, _, method = path.partition("/")
        inner = handler.unary_unary
        handled, handling = self._metrics.handled, self._metrics.handling.labels(service, method)

        async def timed(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                return await inner(request, context)
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                final = context.code() or code
                handled.labels(service, method, final.name).inc()
                handling.observe(time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            timed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


# Why a running service cannot serve right now (NATS away, its bucket not followed), or None when it can.
CannotServe = Callable[[], str | None]


def _can_serve() -> str | None:
    return None


# The health service name a liveness probe asks (k8s: `grpc: {port, service: liveness}`): SERVING for as long as the
# process answers, whatever its dependencies do. The server's own name ("") and each service's are readiness: they
# say NOT_SERVING while it cannot serve (NATS away), which must take a replica out of the Service, not restart it.
LIVENESS = "liveness"
_ALIVE = health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class _Health(health.aio.HealthServicer):  # type: ignore[misc]
    """The standard health service, which asks the service at every check whether it can serve: a service that is
    up but cannot do its work answers NOT_SERVING (and the gateway's /healthz says so), instead of SERVING until
    it stops. `LIVENESS` asks only whether the process answers, and so is SERVING through a drain as well."""

    def __init__(self, cannot_serve: CannotServe) -> None:
        super().__init__()
        self._cannot_serve = cannot_serve

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> health_pb2.HealthCheckResponse:
        if request.service == LIVENESS:
            return _ALIVE
        reply = await super().Check(request, context)
        if reply.status == health_pb2.HealthCheckResponse.SERVING and (reason := self._cannot_serve()) is not None:
            logger.warning("health check: cannot serve", extra={"reason": reason})
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.NOT_SERVING)
        return reply


class GrpcServer:
    """Serves the given services on host:port (0 picks a free port); health says SERVING once started, and
    NOT_SERVING while `cannot_serve` gives a reason (`LIVENESS` excepted). With `metrics`, every call is counted and
    timed on them; with `traced_as`, every call is a span of that service's traces (`saip.common.tracing`)."""

    def __init__(
        self,
        services: Sequence[tuple[str, Registrar]],
        host: str,
        port: int,
        *,
        metrics: GrpcMetrics | None = None,
        cannot_serve: CannotServe = _can_serve,
        traced_as: str | None = None,
    ) -> None:
        self._services = services
        self._host = host
        self._requested_port = port
        interceptors: list[grpc.aio.ServerInterceptor] = [] if traced_as is None else [ServerSpans(traced_as)]
        if metrics is not None:
            interceptors.append(_Metrics(metrics))
        self.server = grpc.aio.server(interceptors=interceptors)
        self.health = _Health(cannot_serve)
        self.port = 0

    async def start(self) -> int:
        for _, register in self._services:
            register(self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = [name for name, _ in self._services]
        reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server)
        address = f"{self._host}:{self._requested_port}"
        try:
            self.port = self.server.add_insecure_port(address)
        except RuntimeError as exc:  # how grpc reports an address it cannot bind
            raise OSError(f"cannot serve gRPC on {address}") from exc
        if self.port == 0:
            raise OSError(f"cannot serve gRPC on {address}")
        await self.server.start()
        for name in ["", *names]:
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        logger.info("grpc serving", extra={"address": f"{self._host}:{self.port}", "services": names})
        return self.port

    async def stop(self, grace: float = 5.0) -> None:
        """NOT_SERVING first, so probes stop routing, then let in-flight calls finish within `grace`."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)


@dataclass(frozen=True)
class Endpoints:
    """Where a running service listens: its gRPC port and its /metrics port (each the free one picked for 0)."""

    port: int
    metrics_port: int


def _nothing() -> None:
    """No step between NOT_SERVING and the drain."""


@asynccontextmanager
async def endpoints(
    settings: SaipSettings,
    servicers: Sequence[tuple[str, Registrar]],
    *,
    registry: CollectorRegistry,
    grace: float,
    draining: Callable[[], None] = _nothing,
    said: Mapping[str, object] | None = None,
    cannot_serve: CannotServe = _can_serve,
) -> AsyncIterator[Endpoints]:
    """A service's gRPC API (health, reflection, per-RPC metrics on `registry`, a span per call) and its /metrics
    with the build info, where its settings say it listens; once both serve, the service's one "<service> serving"
    line (with `said`).

    Health asks `cannot_serve` at every check. On the way out, health says NOT_SERVING first, so probes stop
    routing; then `draining` ends what would hold a call open (audit's tails); then the calls in flight get `grace`
    seconds to finish.
    """
    service = settings.service
    host, port, metrics_port = settings.listens()
    publish_build_info(service, registry)
    metrics = MetricsServer(host, metrics_port, registry)
    try:
        server = GrpcServer(
            servicers,
            host,
            port,
            metrics=GrpcMetrics(registry),
            cannot_serve=cannot_serve,
            traced_as=service if settings.tracing_enabled else None,  # off: no interceptor to ask at every call
        )
        await server.start()
        logger.info(
            f"{service} serving", extra={"grpc_port": server.port, "metrics_port": metrics.port, **(said or {})}
        )
        try:
            yield Endpoints(server.port, metrics.port)
        finally:
            await server.health.enter_graceful_shutdown()
            draining()
            await server.stop(grace)
    finally:
        metrics.stop()


# A servicer's method, as the generated base class declares it: the servicer, the request message, the call's context.
Servicer = TypeVar("Servicer")
Request = TypeVar("Request")
Reply = TypeVar("Reply")
Unary = Callable[[Servicer, Request, grpc.aio.ServicerContext], Awaitable[Reply]]
Streaming = Callable[[Servicer, Request, grpc.aio.ServicerContext], AsyncIterator[Reply]]


def _given(request: Any) -> Any:
    """What a request gave, as the masking reads it: a message's fields (a stream of requests: nothing)."""
    if not isinstance(request, Message):
        return None
    return json_format.MessageToDict(request, preserving_proto_field_name=True)


# gRPC carries a status's details in its trailing metadata, percent-encoded; a client refuses more than 16 KiB of it and
# now and then more than 8 KiB (its soft limit): the details arrive as gRPC's own "metadata size exceeds ... limit"
# instead of the service's sentence. A refusal that quotes a long input is cut to fit: each long run without a space or
# a quote to its start and its length, and the whole, if still too long, to its start and its end (the sentence says
# what to do last).
LONG_RUN = 200
DETAILS_LIMIT = 4 * 1024
_LONG_RUN = re.compile(rf"[^\s']{{{LONG_RUN + 1},}}")


def _wire_size(text: str) -> int:
    """The size of `text` as grpc-message carries it: printable ASCII as it is, every other byte as %XX."""
    return sum(1 if 0x20 <= byte < 0x7F and byte != 0x25 else 3 for byte in text.encode())


def _within(text: str, budget: int) -> int:
    """How many characters of `text`, from its start, fit `budget` bytes on the wire."""
    used = 0
    for count, char in enumerate(text):
        used += _wire_size(char)
        if used > budget:
            return count
    return len(text)


def _shortened(run: re.Match[str]) -> str:
    return f"{run.group()[:60]}… ({len(run.group())} characters)"


def bounded(details: str) -> str:
    """`details` cut to fit a status (DETAILS_LIMIT bytes on the wire), with the words around a long input kept."""
    text = _LONG_RUN.sub(_shortened, details)
    if _wire_size(text) <= DETAILS_LIMIT:
        return text
    half = DETAILS_LIMIT // 2 - 8
    return f"{text[: _within(text, half)]} … {text[len(text) - _within(text[::-1], half) :]}"


class RpcEdge:
    """Where a service's errors leave as gRPC statuses: its own errors by the status table, with their sentence as the
    details the gateway shows, masked as the audit trail masks (a refusal quotes the caller's input, which may hold a
    secret) and `bounded` to what a status carries; `errors` is the base of its own errors, or several bases when it
    raises a library's too. Anything else is INTERNAL with a pointer to the service's log (the error itself is logged,
    never sent). Servicer methods are wrapped with `unary` (a coroutine: a unary call, or a stream the method writes
    as it goes with `context.write`) or `streaming` (an async generator)."""

    def __init__(
        self,
        service: str,
        errors: type[Exception] | tuple[type[Exception], ...],
        statuses: Mapping[type[Exception], grpc.StatusCode],
    ) -> None:
        self.service = service
        self._errors = errors
        self._statuses = dict(statuses)

    def status_of(self, error: Exception) -> grpc.StatusCode:
        for cls in type(error).__mro__:
            if cls in self._statuses:
                return self._statuses[cls]
        return grpc.StatusCode.INTERNAL

    async def abort(self, context: grpc.aio.ServicerContext, error: Exception, request: Any = None) -> NoReturn:
        if isinstance(error, self._errors):
            await context.abort(self.status_of(error), bounded(mask_quoted(str(error), _given(request))))
        logger.error("unexpected error in an RPC", exc_info=error, extra={"grpc_service": self.service})
        await context.abort(grpc.StatusCode.INTERNAL, f"unexpected error in the {self.service} service; see its log")
        raise AssertionError("unreachable: abort raises")

    def unary(self, method: Unary[Servicer, Request, Reply]) -> Unary[Servicer, Request, Reply]:
        @functools.wraps(method)
        async def call(servicer: Servicer, request: Request, context: grpc.aio.ServicerContext) -> Reply:
            try:
                return await method(servicer, request, context)
            except Exception as exc:  # the RPC edge: every error leaves as a status
                await self.abort(context, exc, request)

        return call

    def streaming(self, method: Streaming[Servicer, Request, Reply]) -> Streaming[Servicer, Request, Reply]:
        @functools.wraps(method)
        async def call(servicer: Servicer, request: Request, context: grpc.aio.ServicerContext) -> AsyncIterator[Reply]:
            try:
                async for item in method(servicer, request, context):
                    yield item
            except Exception as exc:  # the RPC edge: every error leaves as a status
                await self.abort(context, exc, request)

        return call
