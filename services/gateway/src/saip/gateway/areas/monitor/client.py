"""The audit service over the gateway's channel to it: the monitor queries, the recent traces, the chain check and
the live tail."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from saip.gateway.clients import ServiceChannel
from saip.v1 import audit_pb2
from saip.v1.audit_pb2_grpc import AuditServiceStub


class AuditClient:
    def __init__(self, channel: ServiceChannel) -> None:
        self._channel = channel

    def _stub(self) -> AuditServiceStub:
        return self._channel.stub(AuditServiceStub)

    async def overview(self) -> audit_pb2.GetOverviewResponse:
        return await self._channel.call(self._stub().GetOverview, audit_pb2.GetOverviewRequest())

    async def management_calls(
        self, request: audit_pb2.ListManagementCallsRequest
    ) -> audit_pb2.ListManagementCallsResponse:
        return await self._channel.call(self._stub().ListManagementCalls, request)

    async def tool_calls(self, request: audit_pb2.ListToolCallsRequest) -> audit_pb2.ListToolCallsResponse:
        return await self._channel.call(self._stub().ListToolCalls, request)

    async def risk_events(self, request: audit_pb2.ListRiskEventsRequest) -> audit_pb2.ListRiskEventsResponse:
        return await self._channel.call(self._stub().ListRiskEvents, request)

    async def hitl(self, request: audit_pb2.GetHitlSummaryRequest) -> audit_pb2.GetHitlSummaryResponse:
        return await self._channel.call(self._stub().GetHitlSummary, request)

    async def traces(self, request: audit_pb2.ListTracesRequest) -> audit_pb2.ListTracesResponse:
        return await self._channel.call(self._stub().ListTraces, request)

    async def trace(self, trace_id: str) -> audit_pb2.GetTraceResponse:
        return await self._channel.call(self._stub().GetTrace, audit_pb2.GetTraceRequest(trace_id=trace_id))

    async def entry(self, seq: int) -> audit_pb2.ChainedRecord:
        return await self._channel.call(self._stub().GetEntry, audit_pb2.GetEntryRequest(seq=seq))

    async def export(self, wanted: audit_pb2.CallFilter) -> AsyncIterator[audit_pb2.ChainedRecord]:
        """The management calls `wanted` keeps, oldest first, as the audit service reads them off the chain."""
        async for record in self._channel.stream(lambda: self._stub().ExportManagementCalls(wanted)):
            yield record

    async def verify(self) -> audit_pb2.VerifyChainResponse:
        return await self._channel.call(self._stub().VerifyChain, audit_pb2.VerifyChainRequest())

    async def tail(self, backlog: int) -> AsyncIterator[audit_pb2.ChainedRecord]:
        """The last `backlog` entries, then each new one as it is chained; a cancelled stream just ends."""
        request = audit_pb2.TailEntriesRequest(backlog=backlog)
        cancelled = frozenset({grpc.StatusCode.CANCELLED})
        async for record in self._channel.stream(lambda: self._stub().TailEntries(request), ends=cancelled):
            yield record
