"""The shipyard service over the gateway's channel to it: the methods the saip_shipyard_* tools, the REST API and the
command line share."""

from __future__ import annotations

from dataclasses import dataclass, field

from saip.gateway.clients import ServiceChannel
from saip.v1 import shipyard_pb2 as pb
from saip.v1.shipyard_pb2_grpc import ShipyardServiceStub

SHIP_DEADLINE = 600.0  # a ship snapshots every knowledge tool's collection
RUN_DEADLINE = 330.0  # a run waits for the server's health check, or for docker compose / kubectl
EXPORT_DEADLINE = 120.0  # the bundle's snapshots are part of an export


@dataclass
class Export:
    """An export as the shipyard streamed it: its header, and each file's mode and content by path, in order."""

    header: pb.ExportHeader = field(default_factory=pb.ExportHeader)
    modes: dict[str, int] = field(default_factory=dict)
    contents: dict[str, bytearray] = field(default_factory=dict)


class ShipyardClient:
    def __init__(self, channel: ServiceChannel) -> None:
        self._channel = channel

    def _stub(self) -> ShipyardServiceStub:
        return self._channel.stub(ShipyardServiceStub)

    async def servers(self) -> pb.ListShippedServersReply:
        return await self._channel.call(self._stub().ListServers, pb.ListShippedServersRequest())

    async def shippable(self) -> pb.ListShippableReply:
        return await self._channel.call(self._stub().ListShippable, pb.ListShippableRequest())

    async def validate(self, proposal: pb.BundleProposal) -> pb.ValidationReport:
        return await self._channel.call(self._stub().Validate, proposal)

    async def ship(self, proposal: pb.BundleProposal) -> pb.ShipReply:
        return await self._channel.call(self._stub().Ship, proposal, SHIP_DEADLINE)

    async def status(self, name: str) -> pb.ServerStatus:
        return await self._channel.call(self._stub().GetStatus, pb.ShippedServerRequest(name=name))

    async def logs(self, name: str, lines: int) -> pb.LogsReply:
        return await self._channel.call(self._stub().GetLogs, pb.LogsRequest(name=name, lines=lines))

    async def targets(self) -> pb.ListTargetsReply:
        return await self._channel.call(self._stub().ListTargets, pb.ListTargetsRequest())

    async def plan_run(self, request: pb.RunRequest) -> pb.RunPlan:
        return await self._channel.call(self._stub().PlanRun, request)

    async def run(self, request: pb.RunRequest) -> pb.ServerStatus:
        return await self._channel.call(self._stub().Run, request, RUN_DEADLINE)

    async def stop(self, name: str) -> pb.ServerStatus:
        return await self._channel.call(self._stub().Stop, pb.ShippedServerRequest(name=name), RUN_DEADLINE)

    async def delete(self, request: pb.DeleteShippedServerRequest) -> pb.DeleteShippedServerReply:
        return await self._channel.call(self._stub().Delete, request)

    async def token(self, name: str) -> pb.TokenReply:
        return await self._channel.call(self._stub().GetToken, pb.ShippedServerRequest(name=name))

    async def export(self, request: pb.ExportRequest) -> Export:
        found = Export()
        async for piece in self._channel.stream(lambda: self._stub().Export(request, timeout=EXPORT_DEADLINE)):
            if piece.HasField("header"):
                found.header = piece.header
            else:
                found.modes[piece.chunk.path] = piece.chunk.mode
                found.contents.setdefault(piece.chunk.path, bytearray()).extend(piece.chunk.data)
        return found
