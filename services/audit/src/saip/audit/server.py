"""Wiring of the audit service: NATS, the collector, the views, the gRPC API and /metrics, and a drain on
SIGTERM. The servicer converts protobuf to domain calls and back; errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import grpc
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY, CollectorRegistry
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from saip.audit import records, views
from saip.audit.clients import (
    ACK_WAIT,
    REQUEST_TIMEOUT,
    JetStreamLedger,
    JetStreamRecords,
    connect,
    ensure_audit_stream,
)
from saip.audit.collector import Collector
from saip.audit.config import AuditSettings
from saip.audit.errors import AuditError, InvalidRequest, StoreUnavailable, TailTooSlow
from saip.audit.metrics import AuditMetrics
from saip.audit.verify import verify
from saip.common import bus, lifecycle
from saip.common.grpc_server import GrpcServer, RpcEdge
from saip.common.masking import Masker
from saip.common.metrics import MetricsServer, publish_build_info
from saip.v1 import audit_pb2, audit_pb2_grpc, common_pb2

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.AuditService"
STOP_GRACE = 3.0  # seconds in-flight calls and the record in hand get on shutdown
START_WITHIN = 60.0  # how long start waits for NATS and JetStream
PENDING_REFRESH = 5.0  # seconds between refreshes of saip_audit_pending_records

_EDGE = RpcEdge(
    "audit",
    AuditError,
    {
        InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
        TailTooSlow: grpc.StatusCode.RESOURCE_EXHAUSTED,
    },
)
_unary = _EDGE.unary
_streaming = _EDGE.streaming
_DECISION_OF_LABEL = {label: value for value, label in records.HITL_DECISION_LABELS.items()}
_SIDE_OF_LABEL = {label: value for value, label in records.HITL_SIDE_LABELS.items()}

R = TypeVar("R")


def _chained(entry: views.Chained) -> audit_pb2.ChainedRecord:
    return audit_pb2.ChainedRecord(index=entry.index, seq=entry.seq, record=entry.record)


def _risk(entry: views.RiskView) -> audit_pb2.RiskEventEntry:
    return audit_pb2.RiskEventEntry(index=entry.index, seq=entry.seq, event=entry.event)


class AuditServicer:
    """saip.v1.AuditService over the views, the ledger and the collector's consumer."""

    def __init__(
        self,
        audit_views: views.AuditViews,
        ledger: JetStreamLedger,
        source: JetStreamRecords,
        metrics: AuditMetrics,
        since: datetime,
    ) -> None:
        self._views = audit_views
        self._ledger = ledger
        self._source = source
        self._metrics = metrics
        self._since = since

    @_unary
    async def GetOverview(self, request: Any, context: Any) -> audit_pb2.GetOverviewResponse:
        pending = await self._source.pending()
        outcomes = self._views.outcome_counts()
        risk_types = self._views.risk_type_counts()
        response = audit_pb2.GetOverviewResponse(
            window=len(self._views.management),
            management_outcomes=[
                audit_pb2.OutcomeCount(outcome=outcome, count=outcomes[outcome]) for outcome in records.OUTCOME_LABELS
            ],
            risk_events=[
                audit_pb2.TypeCount(type=risk_type, count=count)
                for risk_type, count in sorted(risk_types.items(), key=lambda item: (-item[1], item[0]))
            ],
            pending=pending,
            capacity=self._views.capacity,
        )
        last = self._views.last
        if last is not None:
            response.chain_length = last.index
            response.head_hash = last.hash.hex()
            response.last_entry_time.FromDatetime(last.chained_at)
        response.collector_since.FromDatetime(self._since)
        return response

    @_unary
    async def ListManagementCalls(self, request: Any, context: Any) -> audit_pb2.ListManagementCallsResponse:
        def matches(entry: views.Chained) -> bool:
            call = entry.record.management
            tool_ok = not request.tool or call.tool == request.tool
            return tool_ok and request.outcome in (common_pb2.OUTCOME_UNSPECIFIED, call.outcome)

        found = await views.page(
            self._views.management,
            views.as_management,
            matches,
            self._ledger,
            limit=views.page_size(request.limit),
            before_seq=request.before_seq,
        )
        return audit_pb2.ListManagementCallsResponse(
            entries=[_chained(entry) for entry in found.items], next_before_seq=found.next_before_seq
        )

    @_unary
    async def ListToolCalls(self, request: Any, context: Any) -> audit_pb2.ListToolCallsResponse:
        def matches(entry: views.Chained) -> bool:
            return not request.tool or entry.record.tool_call.tool == request.tool

        found = await views.page(
            self._views.tools,
            views.as_tool_call,
            matches,
            self._ledger,
            limit=views.page_size(request.limit),
            before_seq=request.before_seq,
        )
        return audit_pb2.ListToolCallsResponse(
            entries=[_chained(entry) for entry in found.items], next_before_seq=found.next_before_seq
        )

    @_unary
    async def ListRiskEvents(self, request: Any, context: Any) -> audit_pb2.ListRiskEventsResponse:
        def matches(entry: views.RiskView) -> bool:
            return not request.type or entry.event.type == request.type

        found = await views.page(
            self._views.risks,
            views.as_risk,
            matches,
            self._ledger,
            limit=views.page_size(request.limit),
            before_seq=request.before_seq,
        )
        return audit_pb2.ListRiskEventsResponse(
            entries=[_risk(entry) for entry in found.items], next_before_seq=found.next_before_seq
        )

    @_unary
    async def GetHitlSummary(self, request: Any, context: Any) -> audit_pb2.GetHitlSummaryResponse:
        recent = views.page_size(request.recent, name="recent", default=10)
        counts = self._metrics.hitl_counts()
        questions, rate = records.approval(counts)
        response = audit_pb2.GetHitlSummaryResponse(
            counts=[
                audit_pb2.HitlCount(side=_SIDE_OF_LABEL[side], decision=_DECISION_OF_LABEL[decision], count=count)
                for (side, decision), count in counts.items()
            ],
            approval_rate=rate,
            questions=questions,
            recent=[_chained(entry) for entry in self._views.recent_decisions(recent)],
        )
        response.collector_since.FromDatetime(self._since)
        return response

    @_unary
    async def VerifyChain(self, request: Any, context: Any) -> audit_pb2.VerifyChainResponse:
        first, last = await self._ledger.bounds()
        if last == 0:
            return audit_pb2.VerifyChainResponse(ok=True)
        async with contextlib.aclosing(self._ledger.read(first, last)) as messages:
            report = await verify(messages)
        response = audit_pb2.VerifyChainResponse(
            ok=report.ok, checked=report.checked, first_index=report.first_index, last_index=report.last_index
        )
        if report.broken is not None:
            response.broken.CopyFrom(
                audit_pb2.BrokenLink(index=report.broken.index, seq=report.broken.seq, reason=report.broken.reason)
            )
        return response

    @_streaming
    async def TailEntries(self, request: Any, context: Any) -> AsyncIterator[audit_pb2.ChainedRecord]:
        backlog = views.page_size(request.backlog, name="backlog")
        with self._views.tail(backlog) as (entries, tail):
            for entry in entries:
                yield _chained(entry)
            while True:
                yield _chained(await tail.next())


class AuditApp:
    """One audit process: everything `start` opens, `stop` closes in reverse, draining what is in flight."""

    def __init__(
        self, settings: AuditSettings, *, registry: CollectorRegistry = REGISTRY, ack_wait: float = ACK_WAIT
    ) -> None:
        self.settings = settings
        self.metrics = AuditMetrics(registry)
        self._registry = registry
        self._ack_wait = ack_wait
        self.views = views.AuditViews(
            settings.management_audit_capacity, on_entry=lambda entry: self.metrics.chain_length.set(entry.index)
        )
        self.since = datetime.now(UTC)
        self.port = 0
        self.metrics_port = 0
        self._nc: NatsClient | None = None
        self._records: JetStreamRecords | None = None
        self._collector: Collector | None = None
        self._grpc: GrpcServer | None = None
        self._metrics_server: MetricsServer | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        settings = self.settings
        self._nc = await connect(settings.nats_url, within=START_WITHIN)
        js = self._nc.jetstream(timeout=REQUEST_TIMEOUT)
        ledger = JetStreamLedger(self._nc)
        self._records = JetStreamRecords(js, ack_wait=self._ack_wait)
        await _when_available(lambda: ensure_audit_stream(js, settings))
        await _when_available(self._records.open)
        _, last_seq = await _when_available(ledger.bounds)
        taken = await _when_available(lambda: self.views.rebuild(ledger, last_seq))
        self._tasks.append(asyncio.create_task(self.views.keep_current(ledger), name="audit-views"))
        chained_ids = [records.record_id(entry.record) for entry in self.views.recent.newest_first()]
        self._collector = Collector(self._records, ledger, Masker(), self.metrics, chained_ids=chained_ids)
        self._tasks.append(self._collector.start())
        self._tasks.append(asyncio.create_task(self._refresh_pending(self._records), name="audit-pending"))
        servicer = AuditServicer(self.views, ledger, self._records, self.metrics, self.since)
        self._grpc = GrpcServer(
            [(SERVICE_NAME, functools.partial(audit_pb2_grpc.add_AuditServiceServicer_to_server, servicer))],
            settings.audit_host,
            settings.audit_port,
        )
        self.port = await self._grpc.start()
        self._metrics_server = MetricsServer(settings.audit_host, settings.audit_metrics_port, self._registry)
        self.metrics_port = self._metrics_server.port
        logger.info(
            "audit serving",
            extra={
                "grpc_port": self.port,
                "metrics_port": self.metrics_port,
                "views_rebuilt_from": taken,
                "chain_length": self.views.last.index if self.views.last else 0,
            },
        )

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """NOT_SERVING, end the tails and in-flight calls, finish the record in hand, drain NATS."""
        if self._grpc is not None:
            await self._grpc.health.enter_graceful_shutdown()
        self.views.close_tails()
        if self._grpc is not None:
            await self._grpc.stop(grace)
        if self._collector is not None:
            await self._collector.stop(grace)
        await lifecycle.cancel_all(self._tasks)
        if self._records is not None:
            await self._records.close()
        if self._nc is not None:
            await bus.close(self._nc, within=grace)
        if self._metrics_server is not None:
            self._metrics_server.stop()
        logger.info("audit stopped")

    async def failure(self) -> BaseException | None:
        """Wait until a background task (collector, views, pending refresh) ends, which only a fault does."""
        return await lifecycle.first_failure(self._tasks)

    async def _refresh_pending(self, source: JetStreamRecords) -> None:
        while True:
            try:
                self.metrics.pending_records.set(await source.pending())
            except StoreUnavailable as exc:
                logger.debug("pending records not refreshed", extra={"error": str(exc)})
            await asyncio.sleep(PENDING_REFRESH)


async def _when_available(operation: Callable[[], Awaitable[R]]) -> R:
    """Run a start-up step, retrying while NATS or JetStream is not answering yet (within START_WITHIN)."""
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(StoreUnavailable),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        stop=stop_after_delay(START_WITHIN),
        reraise=True,
    ):
        with attempt:
            return await operation()
    raise AssertionError("unreachable: tenacity reraises the last error")


async def run(settings: AuditSettings, shutdown: lifecycle.Shutdown) -> None:
    """Serve until SIGTERM or SIGINT; a background fault stops the service with exit code 1."""
    publish_build_info("audit")
    await lifecycle.serve_app(AuditApp(settings), shutdown, "audit", expected=(StoreUnavailable, OSError))
