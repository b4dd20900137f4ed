"""The gateway's outbound side: NATS (the token record, audit publishing with a disk spool; the approvals' state is
`approval_store`) and the one gRPC channel it keeps to each saip service, which every client of that service is built
over."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC
from typing import Any, TypeVar, cast

import anyio
import grpc
from google.protobuf.message import DecodeError
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js.errors import KeyDeletedError, KeyNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue
from opentelemetry.trace import SpanKind

from saip.common import names, tracing
from saip.gateway.auth import TokenRecord
from saip.gateway.errors import (
    ServiceConflict,
    ServiceNotConfigured,
    ServiceNotFound,
    ServiceRefused,
    ServiceUnavailable,
)
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.spool import Spool
from saip.v1 import events_pb2, gateway_pb2

logger = logging.getLogger(__name__)

MSG_ID = names.MSG_ID
_T = TypeVar("_T")
_S = TypeVar("_S")


class KvTokenRecords:
    """The MCP token record in the saip-auth bucket (its hash only)."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self) -> TokenRecord | None:
        try:
            entry = await self._kv.get(names.MCP_TOKEN_KEY)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        return _token_record(entry.value)

    async def put(self, record: TokenRecord) -> None:
        created = Timestamp()
        created.FromDatetime(record.created_at)
        message = gateway_pb2.McpTokenRecord(
            sha256_hex=record.sha256_hex, created_at=created, created_by=record.created_by
        )
        try:
            await self._kv.put(names.MCP_TOKEN_KEY, message.SerializeToString())
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None

    async def delete(self) -> None:
        try:
            await self._kv.delete(names.MCP_TOKEN_KEY)
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None

    async def watch(self) -> AsyncIterator[TokenRecord | None]:
        """The current record, then every change (None when removed), until the watcher stops."""
        watcher = await self._kv.watch(names.MCP_TOKEN_KEY)
        try:
            async for entry in watcher:
                if entry is None:
                    continue
                if entry.operation in (KV_DEL, KV_PURGE):
                    yield None
                else:
                    yield _token_record(entry.value)
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]


def _token_record(raw: bytes | None) -> TokenRecord | None:
    if not raw:
        return None
    try:
        message = gateway_pb2.McpTokenRecord.FromString(raw)
    except DecodeError:
        logger.error("unreadable mcp token record; treating the token as unset")
        return None
    return TokenRecord(message.sha256_hex, message.created_at.ToDatetime(UTC), message.created_by)


class AuditPublisher:
    """Publishes audit records to JetStream and waits for the ack; while NATS is away they go to the spool, in order.

    Once a record is spooled, later ones are spooled behind it until the spool is flushed, so the stream receives
    them in the order the calls finished.
    """

    def __init__(
        self, nc: NatsClient, spool: Spool, metrics: GatewayMetrics | None = None, *, timeout: float = 2.0
    ) -> None:
        """`metrics` None counts on a registry of its own (a publisher outside a gateway: a test, a benchmark)."""
        self._nc = nc
        self._js = nc.jetstream()
        self._spool = spool
        self._metrics = metrics or GatewayMetrics()
        self._timeout = timeout
        self._wake = anyio.Event()
        self._lock = anyio.Lock()
        self._metrics.audit_spooled.set(len(spool))
        if len(spool):  # records a former run of this gateway spooled go out at its start, not with its next call
            self._wake.set()

    def wake(self) -> None:
        """Called when NATS comes back, so the spool is flushed at once."""
        self._wake.set()

    async def management_call(self, record: events_pb2.ManagementCall) -> str | None:
        return await self.publish(names.AUDIT_MANAGEMENT, events_pb2.AuditRecord(management=record), record.id)

    async def tool_call(self, record: events_pb2.ToolCall) -> str | None:
        return await self.publish(names.AUDIT_TOOL, events_pb2.AuditRecord(tool_call=record), record.id)

    async def publish(self, subject: str, record: events_pb2.AuditRecord, record_id: str) -> str | None:
        """None once the record is durable (acked, or on disk); otherwise a warning for the caller's answer."""
        payload = record.SerializeToString()
        if len(self._spool) == 0 and self._nc.is_connected:
            with _SPANS.span(f"nats publish {subject}", kind=SpanKind.PRODUCER, attributes=_publish(subject)):
                try:
                    # The audit collector continues the call's trace from the traceparent header.
                    headers = tracing.inject({MSG_ID: record_id})
                    await self._js.publish(subject, payload, timeout=self._timeout, headers=headers)
                    self._metrics.audit_records.labels("acked").inc()
                    return None
                except (NatsError, TimeoutError, OSError) as exc:
                    logger.warning("audit record not acked; spooling it", extra={"error": type(exc).__name__})
        try:
            async with self._lock:
                self._spool.append(subject, record_id, payload)
        except OSError as exc:
            logger.error("audit record lost: neither NATS nor the spool took it", extra={"error": str(exc)})
            return f"The audit record of this call could not be stored ({exc.strerror or exc})."
        self._metrics.audit_records.labels("spooled").inc()
        self._metrics.audit_spooled.set(len(self._spool))
        self._wake.set()
        return None

    async def flush_forever(self) -> None:
        """Flush the spool whenever there is something in it and NATS is there; retry with a short pause."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while len(self._spool) and await self._flush_one():
                pass
            if len(self._spool):
                with anyio.move_on_after(1.0):
                    await self._wake.wait()
                self._wake.set()

    async def _flush_one(self) -> bool:
        if not self._nc.is_connected:
            return False
        async with self._lock:
            item = self._spool.oldest()
            if item is None:
                return False
            try:
                await self._js.publish(
                    item.subject, item.payload, timeout=self._timeout, headers={MSG_ID: item.record_id}
                )
            except (NatsError, TimeoutError, OSError):
                return False
            self._spool.remove(item)
        self._metrics.audit_records.labels("flushed").inc()
        self._metrics.audit_spooled.set(len(self._spool))
        return True


_SPANS = tracing.tracer("gateway")


def _publish(subject: str) -> dict[str, str | int | float | bool]:
    return {"messaging.system": "nats", "messaging.destination.name": subject}


# gRPC waits 1 s before it tries a refused connection again, then 1.6 times longer each time: a service that started
# just after the gateway's first health check would be seen up to a second late, on a stack start meant to take
# three. The services are on the same host or in the same cluster, so trying again sooner costs nothing; the attempts
# still space out, to one every 2 s.
RECONNECT = (("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 2000))


class ServiceChannel:
    """The one gRPC channel the gateway keeps to a saip service: a deadline on every call, its health, and its errors
    in the gateway's words. Opened on first use (inside the gateway's event loop) and closed with the gateway; without
    an address every call says the service is not configured."""

    def __init__(self, service: str, address: str | None, *, deadline: float = 5.0) -> None:
        self.service = service
        self.address = address
        self._deadline = deadline
        self._channel: grpc.aio.Channel | None = None
        self._stubs: dict[Callable[[grpc.aio.Channel], Any], Any] = {}

    @property
    def configured(self) -> bool:
        return bool(self.address)

    def stub(self, factory: Callable[[grpc.aio.Channel], _S]) -> _S:
        """The stub `factory` builds over this channel, built once per open channel."""
        if not self.address:
            raise ServiceNotConfigured(self.service)
        if self._channel is None:
            self._channel = tracing.channel("gateway", self.address, options=RECONNECT)
        if factory not in self._stubs:
            self._stubs[factory] = factory(self._channel)
        return cast(_S, self._stubs[factory])

    async def close(self) -> None:
        channel, self._channel = self._channel, None
        self._stubs.clear()
        if channel is not None:
            await channel.close()

    async def healthy(self) -> bool:
        if not self.configured:
            return False
        try:
            reply = await self.stub(health_pb2_grpc.HealthStub).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=1.0
            )
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def call(self, method: Callable[..., Awaitable[_T]], request: Any, deadline: float | None = None) -> _T:
        try:
            return await method(request, timeout=deadline or self._deadline)
        except grpc.aio.AioRpcError as exc:
            raise _mapped(self.service, exc) from None
        except anyio.get_cancelled_exc_class():
            await _cancelled()
            raise

    async def stream(
        self, opened: Callable[[], Any], *, ends: frozenset[grpc.StatusCode] = frozenset()
    ) -> AsyncIterator[Any]:
        """The messages of the server stream `opened` starts; leaving early cancels it. A failure is in the gateway's
        words, except the codes in `ends`, which only say the stream stopped."""
        call = opened()
        try:
            async for message in call:
                yield message
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in ends:
                raise _mapped(self.service, exc) from None
        except anyio.get_cancelled_exc_class():
            await _cancelled()
            raise
        finally:
            call.cancel()


async def _cancelled() -> None:
    """grpc.aio ends a call it cancelled with a CancelledError of its own, which the anyio scope that cancelled it (a
    chat turn's deadline) does not take for its own and lets through: a checkpoint raises the scope's instead (and
    returns when the cancellation came from elsewhere, whose error is raised on)."""
    await anyio.lowlevel.checkpoint()


# The codes a service refuses with, each as the kind of refusal it is: the person's REST API answers a name nothing has
# with 404 and a change that moved on (or exists already) with 409, the rest with 400.
_REFUSALS: dict[grpc.StatusCode, type[ServiceRefused]] = {
    grpc.StatusCode.INVALID_ARGUMENT: ServiceRefused,
    grpc.StatusCode.FAILED_PRECONDITION: ServiceRefused,
    grpc.StatusCode.ALREADY_EXISTS: ServiceConflict,
    grpc.StatusCode.NOT_FOUND: ServiceNotFound,
    grpc.StatusCode.PERMISSION_DENIED: ServiceRefused,
    grpc.StatusCode.OUT_OF_RANGE: ServiceRefused,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ServiceRefused,
    grpc.StatusCode.ABORTED: ServiceConflict,  # a write against a revision that moved on: the sentence says read again
}


def _mapped(service: str, exc: grpc.aio.AioRpcError) -> Exception:
    """A refusal keeps the service's own sentence; anything else says the service could not be reached."""
    if (refused := _REFUSALS.get(exc.code())) is not None:
        return refused(exc.details() or exc.code().name)
    return ServiceUnavailable(service, exc.code().name.lower().replace("_", " "))
