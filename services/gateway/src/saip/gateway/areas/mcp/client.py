"""The upstream side of the tools service (saip.v1.UpstreamService) over the gateway's channel to it: the methods
the mcp, mcp-register and expose areas, the REST API and the command line share."""

from __future__ import annotations

from saip.gateway.clients import ServiceChannel
from saip.v1 import upstream_pb2 as pb
from saip.v1.upstream_pb2_grpc import UpstreamServiceStub

CONNECT_DEADLINE = 60.0  # a test connection or a registration connects once: the connect timeout, twice at most


class UpstreamClient:
    def __init__(self, channel: ServiceChannel) -> None:
        self._channel = channel

    def _stub(self) -> UpstreamServiceStub:
        return self._channel.stub(UpstreamServiceStub)

    async def servers(self) -> list[pb.UpstreamStatus]:
        return list((await self._channel.call(self._stub().ListServers, pb.ListServersRequest())).servers)

    async def catalog(self, query: str) -> list[pb.CatalogEntry]:
        reply = await self._channel.call(self._stub().SearchCatalog, pb.SearchCatalogRequest(query=query))
        return list(reply.entries)

    async def preview(self, request: pb.PreviewRiskRequest) -> pb.RiskPreview:
        return await self._channel.call(self._stub().PreviewRisk, request, CONNECT_DEADLINE)

    async def server_tools(self, server_id: str) -> pb.ServerTools:
        return await self._channel.call(self._stub().GetServerTools, pb.GetServerToolsRequest(server_id=server_id))

    async def test(self, request: pb.TestConnectionRequest) -> pb.ConnectionReport:
        return await self._channel.call(self._stub().TestConnection, request, CONNECT_DEADLINE)

    async def reconnect(self, server_id: str) -> pb.UpstreamStatus:
        request = pb.ReconnectRequest(server_id=server_id)
        return await self._channel.call(self._stub().Reconnect, request, CONNECT_DEADLINE)

    async def add(self, request: pb.AddServerRequest) -> pb.UpstreamStatus:
        return await self._channel.call(self._stub().AddServer, request, CONNECT_DEADLINE)

    async def remove(self, server_id: str, expected_revision: int = 0) -> pb.RemoveServerReply:
        request = pb.RemoveServerRequest(server_id=server_id, expected_revision=expected_revision)
        return await self._channel.call(self._stub().RemoveServer, request)

    async def composition(self) -> pb.CompositionView:
        return await self._channel.call(self._stub().GetComposition, pb.GetCompositionRequest())

    async def plan(self, change: pb.ExposureChange) -> pb.ExposurePlan:
        return await self._channel.call(self._stub().PlanExposure, change)

    async def apply(self, change: pb.ExposureChange, acknowledged_hashes: dict[str, str]) -> pb.ExposureApplied:
        request = pb.ApplyExposureRequest(change=change, acknowledged_hashes=acknowledged_hashes)
        return await self._channel.call(self._stub().ApplyExposure, request)
