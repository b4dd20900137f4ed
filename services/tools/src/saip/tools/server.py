"""Wiring of the tools service: its lifespan opens the sandbox pool, NATS (its bucket, risk events), Tool Studio,
the upstream servers (`saip.tools.upstream`), and the gRPC API with /metrics, and closes them in reverse. The
servicer converts protobuf to calls of the studio, the exposure setting and the published tools; errors become
statuses at the RPC edge (`saip.tools.statuses`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY, CollectorRegistry

from saip.common import bus, jetstream, lifecycle, names, tracing
from saip.common.grpc_server import Endpoints, endpoints
from saip.common.risk import RiskPublisher
from saip.common.watch import Restarts, keep_alive
from saip.sandbox.job import Limits
from saip.sandbox.pool import Sandbox
from saip.tools import catalog
from saip.tools.clients import HISTORY, WatchedRecords
from saip.tools.config import DECLARED_KEY, ToolsSettings
from saip.tools.exposure import ExposureSetting
from saip.tools.library import Library
from saip.tools.metrics import ToolsMetrics
from saip.tools.published import Published
from saip.tools.runs import Runs
from saip.tools.statuses import EDGE
from saip.tools.studio import Studio
from saip.tools.upstream import server as upstream
from saip.v1 import common_pb2, tools_pb2, tools_pb2_grpc, upstream_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.ToolsService"
STOP_GRACE = 3.0
START_WITHIN = 60.0

_unary = EDGE.unary


class ToolsServicer(tools_pb2_grpc.ToolsServiceServicer):
    """saip.v1.ToolsService over the studio, the exposure setting and the published tools (an RPC it does not
    implement is the generated base's UNIMPLEMENTED)."""

    def __init__(self, studio: Studio, exposure: ExposureSetting, published: Published) -> None:
        self._studio = studio
        self._exposure = exposure
        self._published = published

    @_unary
    async def ListTools(self, request: tools_pb2.ListToolsRequest, context: Any) -> tools_pb2.ListToolsReply:
        return tools_pb2.ListToolsReply(tools=await self._studio.list_tools(request.include_bundled))

    @_unary
    async def GetTool(self, request: tools_pb2.GetToolRequest, context: Any) -> tools_pb2.ToolDetail:
        return await self._studio.get(request.name)

    @_unary
    async def CheckRisk(self, request: tools_pb2.CheckRiskRequest, context: Any) -> tools_pb2.RiskReport:
        return await self._studio.check_risk(request.name, request.spec_json)

    @_unary
    async def SaveDraft(self, request: tools_pb2.SaveDraftRequest, context: Any) -> tools_pb2.SaveDraftReply:
        return await self._studio.save_draft(request.spec_json, request.expected_revision)

    @_unary
    async def TestTool(self, request: tools_pb2.TestToolRequest, context: Any) -> tools_pb2.TestReport:
        return await self._studio.test(request.name, request.arguments_json, request.expected_revision)

    @_unary
    async def PublishTool(self, request: tools_pb2.PublishToolRequest, context: Any) -> tools_pb2.ToolSummary:
        return await self._studio.publish(request.name, request.expected_revision)

    @_unary
    async def DeleteTool(self, request: tools_pb2.DeleteToolRequest, context: Any) -> tools_pb2.DeleteToolReply:
        return await self._studio.delete(request.name, request.expected_revision)

    @_unary
    async def GetExposure(self, request: tools_pb2.GetExposureRequest, context: Any) -> tools_pb2.Exposure:
        return await self._exposure.read()

    @_unary
    async def SetExposure(self, request: tools_pb2.SetExposureRequest, context: Any) -> tools_pb2.Exposure:
        return await self._exposure.set(
            request.auto_expose, request.tools, request.expected_revision, dict(request.expected_tools)
        )

    @_unary
    async def ListServedTools(
        self, request: common_pb2.ListServedToolsRequest, context: Any
    ) -> common_pb2.ListServedToolsReply:
        return common_pb2.ListServedToolsReply(tools=await self._published.served())

    @_unary
    async def CallServedTool(
        self, request: common_pb2.CallServedToolRequest, context: Any
    ) -> common_pb2.CallServedToolReply:
        return await self._published.call(request.name, request.arguments_json)


@dataclass(frozen=True)
class Running(Endpoints):
    """The running tools service: where it listens, its metrics and its studio."""

    metrics: ToolsMetrics
    studio: Studio
    upstream: upstream.Upstream


def cannot_serve(nc: NatsClient, records: WatchedRecords) -> str | None:
    """What keeps Tool Studio from serving: NATS away, or the bucket no longer followed (its listings stale)."""
    if not nc.is_connected:
        return "NATS is not connected"
    if not records.following:
        return f"the {names.TOOLS_BUCKET} bucket is not being followed"
    return None


@asynccontextmanager
async def lifespan(settings: ToolsSettings, *, registry: CollectorRegistry = REGISTRY) -> AsyncIterator[Running]:
    """Open the tools service: NATS, the studio over the saip-tools bucket, the gRPC API, then the sandbox's workers
    warm in the background; on the way out the API drains first, then NATS, then the workers stop."""
    metrics = ToolsMetrics(registry)
    # Validated before anything is opened: a bad declared tool stops the start with the key's name.
    declared = catalog.declared(settings.tools_declared, DECLARED_KEY)
    bundled = catalog.bundled()
    secrets = settings.secrets()
    async with AsyncExitStack() as stack:
        limits = Limits(
            timeout=settings.tools_sandbox_timeout_seconds, memory_bytes=settings.tools_sandbox_memory_mb * 1024 * 1024
        )
        sandbox = Sandbox(settings.tools_sandbox_workers, limits, spares=settings.tools_sandbox_spares)
        stack.push_async_callback(sandbox.close)
        metrics.workers.set(settings.tools_sandbox_workers)
        restarts = Restarts()
        nc = await stack.enter_async_context(
            bus.connection(
                settings.nats_url, "tools", within=START_WITHIN, reconnected=restarts.reconnected, grace=STOP_GRACE
            )
        )
        await stack.enter_async_context(tracing.traced(settings, nc))
        js = nc.jetstream()
        await jetstream.ensure_stream(js, jetstream.audit_stream_config(settings))
        kv = await jetstream.ensure_kv(js, names.TOOLS_BUCKET, history=HISTORY)
        records = WatchedRecords(kv, js)
        group = await lifecycle.background(stack)
        group.start_soon(functools.partial(keep_alive, records.watch, "tools bucket", restarts=restarts))
        with anyio.fail_after(START_WITHIN):
            await records.ready()
        library = Library(
            records=records, bundled=bundled, declared=declared, declared_key=DECLARED_KEY, secrets=secrets
        )
        risk = RiskPublisher(nc, "tools")
        exposure = ExposureSetting(library, metrics)
        runs = Runs(sandbox, risk, metrics)
        studio = Studio(library, exposure, runs, risk, metrics)
        upstreams = await stack.enter_async_context(upstream.opened(settings, nc, js, risk, metrics, restarts))
        servicer = ToolsServicer(studio, exposure, Published(library, exposure, runs))
        registers = [
            (SERVICE_NAME, functools.partial(tools_pb2_grpc.add_ToolsServiceServicer_to_server, servicer)),
            (
                upstream.SERVICE_NAME,
                functools.partial(
                    upstream_pb2_grpc.add_UpstreamServiceServicer_to_server, upstream.UpstreamServicer(upstreams)
                ),
            ),
        ]
        said = {"bundled": len(bundled), "declared": len(declared), "workers": settings.tools_sandbox_workers}
        served = await stack.enter_async_context(
            endpoints(
                settings,
                registers,
                registry=registry,
                grace=STOP_GRACE,
                said=said,
                cannot_serve=functools.partial(cannot_serve, nc, records),
            )
        )
        # The workers warm once the API serves, off the stack's cold start (each worker's imports and first isolate
        # are CPU a start would otherwise spend first), and a call that comes first waits for its worker's warm-up
        # (`Sandbox.run`). A worker that cannot start stops the service.
        group.start_soon(sandbox.warm)
        yield Running(served.port, served.metrics_port, metrics, studio, upstreams)
