"""Wiring of the shipyard service: its lifespan opens NATS (the saip-shipyard bucket, the saip-bundles object
store), the channels to the tools and knowledge services, the local runs' supervisor and the gRPC API with /metrics,
and closes them in reverse (the locally running shipped servers are stopped before the background work ends). Before
the API serves, the local servers that were running when the shipyard stopped run again; the servers declared in
shipyard.servers are shipped and run in the background, as soon as the tools and knowledge services answer. The
servicer converts protobuf to calls of the shipyard; errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import grpc
from prometheus_client import REGISTRY, CollectorRegistry

from saip.common import bus, jetstream, lifecycle, tracing
from saip.common.grpc_server import Endpoints, RpcEdge, endpoints
from saip.shipyard.clients import SHIPYARD_BUCKET, GrpcSources, KvRecords, ObjectArchives
from saip.shipyard.config import ShipyardSettings
from saip.shipyard.errors import (
    Conflict,
    InvalidProposal,
    NotFound,
    RuleRefused,
    ShipyardError,
    StoreUnavailable,
)
from saip.shipyard.local import LocalRuns
from saip.shipyard.metrics import ShipyardMetrics
from saip.shipyard.packing import Places
from saip.shipyard.shipyard import Shipyard
from saip.shipyard.targets import HostCommands
from saip.v1 import shipyard_pb2, shipyard_pb2_grpc

SERVICE_NAME = "saip.v1.ShipyardService"
STOP_GRACE = 3.0
START_WITHIN = 60.0

# The status of each of the service's errors: a parallel table, one in every service's server.py.
_EDGE = RpcEdge(
    "shipyard",
    ShipyardError,
    {
        InvalidProposal: grpc.StatusCode.INVALID_ARGUMENT,
        NotFound: grpc.StatusCode.NOT_FOUND,
        RuleRefused: grpc.StatusCode.FAILED_PRECONDITION,
        Conflict: grpc.StatusCode.ABORTED,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    },
)
_unary = _EDGE.unary


class ShipyardServicer(shipyard_pb2_grpc.ShipyardServiceServicer):
    """saip.v1.ShipyardService over the shipyard: an RPC it does not implement answers UNIMPLEMENTED (the base's)."""

    def __init__(self, shipyard: Shipyard, environment: Callable[[], dict[str, str]]) -> None:
        self._shipyard = shipyard
        self._environment = environment  # what a shipped server may be given (shipyard.variables), read per run

    @_unary
    async def ListServers(
        self, request: shipyard_pb2.ListShippedServersRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ListShippedServersReply:
        return shipyard_pb2.ListShippedServersReply(servers=await self._shipyard.list_servers())

    @_unary
    async def ListShippable(
        self, request: shipyard_pb2.ListShippableRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ListShippableReply:
        return shipyard_pb2.ListShippableReply(tools=await self._shipyard.list_shippable())

    @_unary
    async def Validate(
        self, request: shipyard_pb2.BundleProposal, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ValidationReport:
        return await self._shipyard.validate(request)

    @_unary
    async def Ship(
        self, request: shipyard_pb2.BundleProposal, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ShipReply:
        return await self._shipyard.ship(request)

    @_unary
    async def GetStatus(
        self, request: shipyard_pb2.ShippedServerRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ServerStatus:
        return await self._shipyard.status(request.name)

    @_unary
    async def GetLogs(
        self, request: shipyard_pb2.LogsRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.LogsReply:
        return await self._shipyard.logs(request.name, request.lines)

    @_unary
    async def ListTargets(
        self, request: shipyard_pb2.ListTargetsRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ListTargetsReply:
        return shipyard_pb2.ListTargetsReply(targets=await self._shipyard.targets())

    @_unary
    async def PlanRun(
        self, request: shipyard_pb2.RunRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.RunPlan:
        return await self._shipyard.plan_run(request, self._environment())

    @_unary
    async def Run(
        self, request: shipyard_pb2.RunRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ServerStatus:
        return await self._shipyard.run(request, self._environment())

    @_unary
    async def Stop(
        self, request: shipyard_pb2.ShippedServerRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.ServerStatus:
        return await self._shipyard.stop(request.name)

    @_unary
    async def Delete(
        self, request: shipyard_pb2.DeleteShippedServerRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.DeleteShippedServerReply:
        return await self._shipyard.delete(request)

    @_unary
    async def GetToken(
        self, request: shipyard_pb2.ShippedServerRequest, context: grpc.aio.ServicerContext
    ) -> shipyard_pb2.TokenReply:
        return await self._shipyard.token(request.name)

    @_EDGE.streaming
    async def Export(
        self, request: shipyard_pb2.ExportRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[shipyard_pb2.ExportPiece]:
        async for piece in self._shipyard.export(request):
            yield piece


@dataclass(frozen=True)
class Running(Endpoints):
    """The running shipyard service: where it listens, its metrics and its rules."""

    metrics: ShipyardMetrics
    shipyard: Shipyard
    local: LocalRuns


@asynccontextmanager
async def lifespan(settings: ShipyardSettings, *, registry: CollectorRegistry = REGISTRY) -> AsyncIterator[Running]:
    """Open the shipyard: NATS, its bucket and object store, the source channels, the local supervisor, then the
    gRPC API; on the way out the API drains first, then the local servers stop, then NATS drains."""
    metrics = ShipyardMetrics(registry)
    async with AsyncExitStack() as stack:
        nc = await stack.enter_async_context(
            bus.connection(settings.nats_url, "shipyard", within=START_WITHIN, grace=STOP_GRACE)
        )
        await stack.enter_async_context(tracing.traced(settings, nc))
        js = nc.jetstream()
        kv = await jetstream.ensure_kv(js, SHIPYARD_BUCKET, replicas=settings.nats_replicas)
        archives = await ObjectArchives.open(js)
        sources = GrpcSources(settings.tools_addr, settings.knowledge_addr)
        stack.push_async_callback(sources.close)
        group = await lifecycle.background(stack)
        local = LocalRuns(
            group, metrics, log_lines=settings.shipyard_log_lines, restart_limit=settings.shipyard_restart_limit
        )
        stack.push_async_callback(local.close)
        places = Places(settings.home.resolve(), settings.shipyard_image, settings.shipyard_kube_context)
        shipyard = Shipyard(
            sources, KvRecords(kv), archives, local, HostCommands(), metrics, places, settings.shipyard_servers
        )  # `local` is the local target's supervisor
        environment = functools.partial(settings.shipped_environment, os.environ)
        await shipyard.resume(environment())
        group.start_soon(shipyard.declare, environment())
        register = functools.partial(
            shipyard_pb2_grpc.add_ShipyardServiceServicer_to_server, ShipyardServicer(shipyard, environment)
        )
        said = {"tools": settings.tools_addr or "", "knowledge": settings.knowledge_addr or ""}
        served = await stack.enter_async_context(
            endpoints(settings, [(SERVICE_NAME, register)], registry=registry, grace=STOP_GRACE, said=said)
        )
        yield Running(served.port, served.metrics_port, metrics, shipyard, local)
