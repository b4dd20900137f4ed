"""Wiring of the audit service: its lifespan opens NATS, the collector, the views kept current, and the gRPC API with
/metrics, and closes them in reverse, draining what is in flight. The servicer converts protobuf to domain calls and
back; errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import grpc
from prometheus_client import REGISTRY, CollectorRegistry
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from saip.audit import paging, records, replies, traces, views
from saip.audit.clients.consumer import ACK_WAIT, JetStreamRecords
from saip.audit.clients.ledger import JetStreamLedger
from saip.audit.clients.store import REQUEST_TIMEOUT, ensure_audit_stream
from saip.audit.clients.trace_keeper import keep_traces
from saip.audit.collector import Collector
from saip.audit.config import AuditSettings
from saip.audit.entries import as_management
from saip.audit.errors import (
    AuditError,
    EntryNotFound,
    InvalidRequest,
    StoreUnavailable,
    TailTooSlow,
    TraceNotFound,
)
from saip.audit.metrics import AuditMetrics
from saip.audit.verify import verify
from saip.common import bus, lifecycle, tracing
from saip.common.grpc_server import Endpoints, RpcEdge, endpoints
from saip.common.masking import Masker
from saip.common.watch import Restarts, keep_alive
from saip.v1 import audit_pb2, audit_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.AuditService"
STOP_GRACE = 3.0  # seconds in-flight calls and the batch in hand get on shutdown (together), and NATS's drain after
# The longest a stop takes (docs/audit.md "Stopping"): the calls' and the batch's grace, run together, the batch's task
# cancelled, NATS drained and closed, and a second for the steps that await nothing (the /metrics server's shutdown
# polls every 0.5 s; the background work's cancellation).
STOP_WITHIN = STOP_GRACE + lifecycle.CANCEL_WITHIN + bus.closes_within(STOP_GRACE) + 1.0
START_WITHIN = 60.0  # how long start waits for NATS and JetStream
PENDING_REFRESH = 5.0  # seconds between refreshes of saip_audit_pending_records
TRACE_ID = re.compile("[0-9a-f]{32}")

# The status of each of the service's errors: a parallel table, one in every service's server.py.
_EDGE = RpcEdge(
    "audit",
    AuditError,
    {
        InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
        TailTooSlow: grpc.StatusCode.RESOURCE_EXHAUSTED,
        TraceNotFound: grpc.StatusCode.NOT_FOUND,
        EntryNotFound: grpc.StatusCode.NOT_FOUND,
    },
)
_unary = _EDGE.unary
_streaming = _EDGE.streaming
_DECISION_OF_LABEL = {label: value for value, label in records.HITL_DECISION_LABELS.items()}
_SIDE_OF_LABEL = {label: value for value, label in records.HITL_SIDE_LABELS.items()}

R = TypeVar("R")


class AuditServicer(audit_pb2_grpc.AuditServiceServicer):
    """saip.v1.AuditService over the views, the ledger and the collector's consumer: each RPC of the contract is a
    method here, taking its request message (one the service does not implement would answer UNIMPLEMENTED, by the
    generated base class)."""

    def __init__(
        self,
        audit_views: views.AuditViews,
        ledger: JetStreamLedger,
        source: JetStreamRecords,
        metrics: AuditMetrics,
        since: datetime,
        kept: traces.TraceStore,
    ) -> None:
        self.audit_views = audit_views  # the listings read these two
        self.ledger = ledger
        self.traces = kept
        self._source = source
        self._metrics = metrics
        self._since = since
        self._hitl: tuple[tuple[int, ...], audit_pb2.GetHitlSummaryResponse] | None = None  # _hitl_counted's
        self._times: tuple[int, audit_pb2.AnswerTimes] | None = None  # _answer_times's

    @_unary
    async def GetOverview(
        self, request: audit_pb2.GetOverviewRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.GetOverviewResponse:
        pending = await self._source.pending()
        outcomes = self.audit_views.outcome_counts()
        risk_types = self.audit_views.risk_type_counts()
        response = audit_pb2.GetOverviewResponse(
            window=len(self.audit_views.management),
            management_outcomes=[
                audit_pb2.OutcomeCount(outcome=outcome, count=outcomes[outcome]) for outcome in records.OUTCOME_LABELS
            ],
            risk_events=[
                audit_pb2.TypeCount(type=risk_type, count=count)
                for risk_type, count in sorted(risk_types.items(), key=lambda item: (-item[1], item[0]))
            ],
            pending=pending,
            capacity=self.audit_views.capacity,
        )
        last = self.audit_views.last
        if last is not None:
            response.chain_length = last.index
            response.head_hash = last.hash.hex()
            response.last_entry_time.FromDatetime(last.chained_at)
        response.collector_since.FromDatetime(self._since)
        return response

    @_unary
    async def ListManagementCalls(
        self, request: audit_pb2.ListManagementCallsRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.ListManagementCallsResponse:
        listed = self.audit_views.management, replies.management_calls(request), replies.chained
        return await self._page(audit_pb2.ListManagementCallsResponse, *listed, request)

    @_unary
    async def ListToolCalls(
        self, request: audit_pb2.ListToolCallsRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.ListToolCallsResponse:
        listed = self.audit_views.tools, replies.tool_calls(request), replies.chained
        return await self._page(audit_pb2.ListToolCallsResponse, *listed, request)

    @_unary
    async def ListRiskEvents(
        self, request: audit_pb2.ListRiskEventsRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.ListRiskEventsResponse:
        listed = self.audit_views.risks, replies.risk_events(request), replies.risk
        return await self._page(audit_pb2.ListRiskEventsResponse, *listed, request)

    @_unary
    async def GetEntry(
        self, request: audit_pb2.GetEntryRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.ChainedRecord:
        found = await replies.entry(self.audit_views, self.ledger, request.seq)
        if found is None:
            raise EntryNotFound(request.seq)
        return replies.chained(found)

    @_streaming
    async def ExportManagementCalls(
        self, request: audit_pb2.CallFilter, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[audit_pb2.ChainedRecord]:
        kept = replies.keeps(request)
        since = request.since.ToDatetime(tzinfo=UTC) if request.HasField("since") else None
        async for entry in replies.entries(self.ledger, since):
            if as_management(entry) is not None and kept(entry.record.management):
                yield replies.chained(entry)

    async def _page(
        self,
        reply: Callable[..., R],
        ring: paging.Ring[paging.T],
        matching: Callable[[paging.T], bool],
        shown: Callable[[paging.T], Any],
        request: replies.Paged,
    ) -> R:
        """One page of a listing: the entries of a ring (or, below its horizon, of the ledger) that match the
        request, newest first, each as `shown` makes it, and the cursor of the next page."""
        limit = paging.page_size(request.limit)
        found = await paging.page(ring, matching, self.ledger, limit=limit, before_seq=request.before_seq)
        return reply(entries=[shown(item) for item in found.items], next_before_seq=found.next_before_seq)

    @_unary
    async def GetHitlSummary(
        self, request: audit_pb2.GetHitlSummaryRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.GetHitlSummaryResponse:
        recent = paging.page_size(request.recent, name="recent", default=10)
        response = audit_pb2.GetHitlSummaryResponse()
        response.CopyFrom(self._hitl_counted())
        response.recent.extend(replies.chained(entry) for entry in self.audit_views.recent_decisions(recent))
        response.answer_times.CopyFrom(self._answer_times())
        return response

    def _answer_times(self) -> audit_pb2.AnswerTimes:
        """The recent questions' answer times, made again only when a decided call was chained since the last ask."""
        decisions = self.audit_views.decisions
        newest = next(decisions.newest_first(), None)
        key = newest.seq if newest is not None else 0
        if self._times is None or self._times[0] != key:
            self._times = (key, replies.answer_times(decisions.newest_first()))
        return self._times[1]

    def _hitl_counted(self) -> audit_pb2.GetHitlSummaryResponse:
        """The summary's counts, rate and start, made again only when a decision was counted since the last call,
        so a call copies them rather than making ten counts, a rate and a timestamp again."""
        counts = self._metrics.hitl_counts()
        key = tuple(counts.values())
        if self._hitl is None or self._hitl[0] != key:
            questions, rate = records.approval(counts)
            counted = audit_pb2.GetHitlSummaryResponse(
                counts=[
                    audit_pb2.HitlCount(side=_SIDE_OF_LABEL[side], decision=_DECISION_OF_LABEL[decision], count=count)
                    for (side, decision), count in counts.items()
                ],
                approval_rate=rate,
                questions=questions,
            )
            counted.collector_since.FromDatetime(self._since)
            self._hitl = (key, counted)
        return self._hitl[1]

    @_unary
    async def VerifyChain(
        self, request: audit_pb2.VerifyChainRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.VerifyChainResponse:
        first, last = await self.ledger.bounds()
        if last == 0:
            return audit_pb2.VerifyChainResponse(ok=True)
        async with contextlib.aclosing(self.ledger.read(first, last)) as messages:
            report = await verify(messages)
        response = audit_pb2.VerifyChainResponse(
            ok=report.ok, checked=report.checked, first_index=report.first_index, last_index=report.last_index
        )
        if report.broken is not None:
            response.broken.CopyFrom(
                audit_pb2.BrokenLink(index=report.broken.index, seq=report.broken.seq, reason=report.broken.reason)
            )
        return response

    @_unary
    async def ListTraces(
        self, request: audit_pb2.ListTracesRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.ListTracesResponse:
        if request.min_duration_ms < 0:
            raise InvalidRequest("min_duration_ms must be 0 or more")
        found = self.traces.recent(
            tool=request.tool,
            outcome=request.outcome,
            min_duration_ms=request.min_duration_ms,
            limit=paging.page_size(request.limit),
        )
        return audit_pb2.ListTracesResponse(
            traces=[replies.summary(trace) for trace in found],
            kept=len(self.traces),
            capacity=self.traces.capacity,
            max_age_minutes=self.traces.max_age / 60,
        )

    @_unary
    async def GetTrace(
        self, request: audit_pb2.GetTraceRequest, context: grpc.aio.ServicerContext
    ) -> audit_pb2.GetTraceResponse:
        trace_id = request.trace_id.strip().lower()
        if not TRACE_ID.fullmatch(trace_id):
            raise InvalidRequest("trace_id must be the 32 hex digits a trace listing shows")
        trace = self.traces.get(trace_id)
        if trace is None:
            raise TraceNotFound(trace_id)
        start = trace.start_ns
        return audit_pb2.GetTraceResponse(
            trace=replies.summary(trace),
            spans=[replies.trace_span(span, depth, start) for span, depth in trace.tree()],
            dropped_spans=trace.dropped,
        )

    @_streaming
    async def TailEntries(
        self, request: audit_pb2.TailEntriesRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[audit_pb2.ChainedRecord]:
        backlog = paging.page_size(request.backlog, name="backlog")
        with self.audit_views.tail(backlog) as (entries, tail):
            for entry in entries:
                yield replies.chained(entry)
            while True:
                yield replies.chained(await tail.next())


@dataclass(frozen=True)
class Running(Endpoints):
    """The running audit service: where it listens, its metrics and its views."""

    metrics: AuditMetrics
    views: views.AuditViews


@asynccontextmanager
async def lifespan(
    settings: AuditSettings, *, registry: CollectorRegistry = REGISTRY, ack_wait: float = ACK_WAIT
) -> AsyncIterator[Running]:
    """Open the audit service: NATS and its stream and consumer, the views rebuilt from the ledger's tail and kept
    current, the collector, then the gRPC API. On the way out, within STOP_WITHIN seconds whatever NATS does:
    NOT_SERVING, the tails ended, the calls in flight and the batch in hand finished (chained and acknowledged) within
    one grace, the follower and the other background work cancelled, NATS drained."""
    metrics = AuditMetrics(registry)
    audit_views = views.AuditViews(
        settings.management_audit_capacity, on_entry=lambda entry: metrics.chain_length.set(entry.index)
    )
    since = datetime.now(UTC)
    restarts = Restarts()
    async with AsyncExitStack() as stack:
        nc = await stack.enter_async_context(
            bus.connection(
                settings.nats_url, "saip-audit", within=START_WITHIN, reconnected=restarts.reconnected, grace=STOP_GRACE
            )
        )
        await stack.enter_async_context(tracing.traced(settings, nc))
        js = nc.jetstream(timeout=REQUEST_TIMEOUT)
        ledger = JetStreamLedger(nc)
        source = JetStreamRecords(nc, ack_wait=ack_wait)
        await _when_available(lambda: ensure_audit_stream(js, settings))
        await _when_available(source.open)
        stack.push_async_callback(source.close)
        _, last_seq = await _when_available(ledger.bounds)
        taken = await _when_available(lambda: audit_views.rebuild(ledger, last_seq))
        chained_ids = [records.record_id(entry.record) for entry in audit_views.recent.newest_first()]
        collector = Collector(
            source, ledger, Masker(), metrics, chained_ids=chained_ids, on_appended=audit_views.appended
        )
        collecting = collector.start()
        # Told to stop as the gRPC calls in flight get their grace (`draining` below), so the batch in hand finishes
        # meanwhile; awaited once the background work (entered below, so cancelled first) has ended, before NATS drains.
        stack.push_async_callback(collector.stop, STOP_GRACE)
        group = await lifecycle.background(stack)
        group.start_soon(_fails_with, collector, collecting)
        following = functools.partial(audit_views.keep_current, ledger)
        group.start_soon(functools.partial(keep_alive, following, "audit views", restarts=restarts))
        group.start_soon(_refresh_pending, source, metrics)
        kept = traces.TraceStore(settings.audit_traces_max, settings.audit_traces_max_age_minutes * 60)
        await keep_traces(nc, kept)
        servicer = AuditServicer(audit_views, ledger, source, metrics, since, kept)
        register = functools.partial(audit_pb2_grpc.add_AuditServiceServicer_to_server, servicer)
        said = {"views_rebuilt_from": taken, "chain_length": audit_views.last.index if audit_views.last else 0}

        def draining() -> None:
            audit_views.close_tails()
            collector.stop_soon(STOP_GRACE)

        served = await stack.enter_async_context(
            endpoints(
                settings, [(SERVICE_NAME, register)], registry=registry, grace=STOP_GRACE, draining=draining, said=said
            )
        )
        yield Running(served.port, served.metrics_port, metrics, audit_views)


async def _fails_with(collector: Collector, task: asyncio.Task[None]) -> None:
    """Wait for the collector's task to end, which only a fault or its stop does, and raise what a fault ended it with.

    Being cancelled (the service is stopping) leaves the task alone: `Collector.stop` lets the batch in hand finish.
    Awaiting the task itself would cancel it with this waiter.
    """
    ended = anyio.Event()
    task.add_done_callback(lambda _: ended.set())
    await ended.wait()
    if collector.stopping:
        return  # the stop began during the calls' grace, before the background work is cancelled
    raise task.exception() or RuntimeError("the audit collector stopped by itself")


async def _refresh_pending(source: JetStreamRecords, metrics: AuditMetrics) -> None:
    while True:
        try:
            metrics.pending_records.set(await source.pending())
        except StoreUnavailable as exc:
            logger.debug("pending records not refreshed", extra={"error": str(exc)})
        await anyio.sleep(PENDING_REFRESH)


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
