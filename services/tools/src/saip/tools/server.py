"""Wiring of the tools service: NATS (its bucket, risk events), the sandbox pool, the studio, the gRPC API and
/metrics, and a drain on SIGTERM. The servicer converts protobuf to studio calls;
errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import grpc
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY, CollectorRegistry

from saip.common import bus, lifecycle, names
from saip.common.grpc_server import GrpcServer, RpcEdge
from saip.common.metrics import MetricsServer, publish_build_info
from saip.common.risk import RiskPublisher
from saip.sandbox.job import Limits
from saip.sandbox.pool import Sandbox
from saip.tools import catalog
from saip.tools.clients import HISTORY, KvRecords
from saip.tools.config import DECLARED_KEY, ToolsSettings
from saip.tools.errors import (
    AlreadyPublished,
    Conflict,
    InvalidSpec,
    RuleRefused,
    SandboxError,
    SandboxUnavailable,
    StoreUnavailable,
    ToolNotFound,
    ToolsError,
    UnreadableRecord,
)
from saip.tools.metrics import ToolsMetrics
from saip.tools.studio import Studio
from saip.v1 import common_pb2, tools_pb2, tools_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.ToolsService"
STOP_GRACE = 3.0
START_WITHIN = 60.0

_EDGE = RpcEdge(
    "tools",
    (ToolsError, SandboxError),
    {
        InvalidSpec: grpc.StatusCode.INVALID_ARGUMENT,
        ToolNotFound: grpc.StatusCode.NOT_FOUND,
        AlreadyPublished: grpc.StatusCode.ALREADY_EXISTS,
        RuleRefused: grpc.StatusCode.FAILED_PRECONDITION,
        Conflict: grpc.StatusCode.ABORTED,
        UnreadableRecord: grpc.StatusCode.FAILED_PRECONDITION,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
        SandboxUnavailable: grpc.StatusCode.UNAVAILABLE,
    },
)
_unary = _EDGE.unary


class ToolsServicer:
    """saip.v1.ToolsService over the studio."""

    def __init__(self, studio: Studio) -> None:
        self._studio = studio

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
        return await self._studio.test(request.name, request.arguments_json)

    @_unary
    async def PublishTool(self, request: tools_pb2.PublishToolRequest, context: Any) -> tools_pb2.ToolSummary:
        return await self._studio.publish(request.name)

    @_unary
    async def DeleteTool(self, request: tools_pb2.DeleteToolRequest, context: Any) -> tools_pb2.DeleteToolReply:
        return await self._studio.delete(request.name)

    @_unary
    async def GetExposure(self, request: tools_pb2.GetExposureRequest, context: Any) -> tools_pb2.Exposure:
        return await self._studio.exposure()

    @_unary
    async def SetExposure(self, request: tools_pb2.SetExposureRequest, context: Any) -> tools_pb2.Exposure:
        return await self._studio.set_exposure(request.auto_expose, request.tools, request.expected_revision)

    @_unary
    async def ListServedTools(
        self, request: common_pb2.ListServedToolsRequest, context: Any
    ) -> common_pb2.ListServedToolsReply:
        return common_pb2.ListServedToolsReply(tools=await self._studio.served())

    @_unary
    async def CallServedTool(
        self, request: common_pb2.CallServedToolRequest, context: Any
    ) -> common_pb2.CallServedToolReply:
        return await self._studio.call(request.name, request.arguments_json)


class ToolsApp:
    """One tools process: everything `start` opens, `stop` closes in reverse."""

    def __init__(self, settings: ToolsSettings, *, registry: CollectorRegistry = REGISTRY) -> None:
        self.settings = settings
        self.metrics = ToolsMetrics(registry)
        self._registry = registry
        # Validated before anything is opened: a bad declared tool stops the start with the key's name.
        self.declared = catalog.declared(settings.tools_declared, DECLARED_KEY)
        self.bundled = catalog.bundled()
        self.port = 0
        self.metrics_port = 0
        self.studio: Studio
        self._nc: NatsClient | None = None
        self._sandbox: Sandbox | None = None
        self._grpc: GrpcServer | None = None
        self._metrics_server: MetricsServer | None = None

    async def start(self) -> None:
        settings = self.settings
        self._sandbox = Sandbox(
            settings.tools_sandbox_workers,
            Limits(
                timeout=settings.tools_sandbox_timeout_seconds,
                memory_bytes=settings.tools_sandbox_memory_mb * 1024 * 1024,
            ),
            spares=settings.tools_sandbox_spares,
        )
        self.metrics.workers.set(settings.tools_sandbox_workers)
        self._nc = await bus.connect(settings.nats_url, "tools", within=START_WITHIN)
        js = self._nc.jetstream()
        await bus.ensure_stream(js, bus.audit_stream_config(settings))
        kv = await bus.ensure_kv(js, names.TOOLS_BUCKET, history=HISTORY)
        self.studio = Studio(
            KvRecords(kv),
            self._sandbox,
            RiskPublisher(self._nc, "tools"),
            self.metrics,
            bundled=self.bundled,
            declared=self.declared,
            declared_key=DECLARED_KEY,
        )
        await self._sandbox.warm()
        servicer = ToolsServicer(self.studio)
        self._grpc = GrpcServer(
            [(SERVICE_NAME, functools.partial(tools_pb2_grpc.add_ToolsServiceServicer_to_server, servicer))],
            settings.tools_host,
            settings.tools_port,
        )
        self.port = await self._grpc.start()
        self._metrics_server = MetricsServer(settings.tools_host, settings.tools_metrics_port, self._registry)
        self.metrics_port = self._metrics_server.port
        logger.info(
            "tools serving",
            extra={
                "grpc_port": self.port,
                "metrics_port": self.metrics_port,
                "bundled": len(self.bundled),
                "declared": len(self.declared),
                "workers": settings.tools_sandbox_workers,
            },
        )

    async def stop(self, grace: float = STOP_GRACE) -> None:
        if self._grpc is not None:
            await self._grpc.stop(grace)
        if self._sandbox is not None:
            await self._sandbox.close()
        if self._nc is not None:
            await bus.close(self._nc, within=grace)
        if self._metrics_server is not None:
            self._metrics_server.stop()
        logger.info("tools stopped")

    async def failure(self) -> BaseException | None:
        """The tools service runs no background task of its own (the sandbox pool replaces its workers itself)."""
        return await lifecycle.first_failure([])


async def run(settings: ToolsSettings, shutdown: lifecycle.Shutdown) -> None:
    """Serve until SIGTERM or SIGINT."""
    publish_build_info("tools")
    await lifecycle.serve_app(ToolsApp(settings), shutdown, "tools")
