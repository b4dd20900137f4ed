"""Wiring: the gateway's collaborators, the HTTP app (/mcp, /api/v1, /healthz, /metrics), and the stdio mode."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from importlib.metadata import version
from typing import Any

import anyio
import uvicorn
from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.server.transport_security import TransportSecuritySettings
from nats.aio.client import Client as NatsClient
from nats.js.kv import KeyValue
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from saip.common import bus, names
from saip.common.metrics import publish_build_info
from saip.gateway import api, metrics
from saip.gateway.approval import Approvals
from saip.gateway.auth import McpGuard, TokenService, TokenState
from saip.gateway.clients import AuditClient, AuditPublisher, KvNonces, KvTokenRecords
from saip.gateway.config import GatewaySettings, Transport
from saip.gateway.contributions import knowledge, tools
from saip.gateway.contributions.monitor import MonitorContribution
from saip.gateway.errors import GatewayError
from saip.gateway.gate import Gate
from saip.gateway.management import Contribution
from saip.gateway.mcp_server import LegacySessions, ListChangedNotifier, build_server
from saip.gateway.published import PublishedSource, PublishedTools
from saip.gateway.registrar import Policy, Registrar
from saip.gateway.registry import Registry
from saip.gateway.spool import Spool

logger = logging.getLogger(__name__)

VERSION = version("saip-gateway")
SESSION_IDLE_SECONDS = 30 * 60


class Gateway:
    """Everything one gateway replica holds. Built without I/O; `running()` connects and starts the watchers."""

    def __init__(self, settings: GatewaySettings, extra: Callable[[Gateway], list[Contribution]] | None = None) -> None:
        """`extra` adds contributions beside the built-in ones (the multi-replica tests add tools that ask)."""
        self.settings = settings
        self._extra = extra
        self.tokens = TokenState(settings.configured_token)
        self.registry = Registry()
        self.sessions = LegacySessions()
        self.bus = InMemorySubscriptionBus()
        self.notifier = ListChangedNotifier(self.bus, self.sessions)
        self.loopback_secret = secrets.token_urlsafe(32)
        # The sealed 2026-07-28 state outlives the approval wait, so a late answer is told it was late (TIMEOUT).
        self.state_ttl = max(600.0, 2 * settings.hitl_approval_wait_seconds)
        self.mcp = build_server(
            registry=self.registry,
            sessions=self.sessions,
            bus=self.bus,
            sealing_key=settings.approval_sealing_key.get_secret_value(),
            state_ttl=self.state_ttl,
            loopback_secret=self.loopback_secret,
            version=VERSION,
        )
        self.started = time.time()
        self.nc: NatsClient
        self.audit: AuditClient
        self.publisher: AuditPublisher
        self.registrar: Registrar
        self.token_service: TokenService
        self.monitor: MonitorContribution
        self.tools: tools.ToolsContribution | None = None
        self.knowledge: knowledge.KnowledgeContribution | None = None
        self.published: list[PublishedSource] = []
        # Each watcher waits on one of these; a NATS reconnect sets them all, so every watch starts over.
        self._reconnected: set[anyio.Event] = set()

    def management_status(self) -> dict[str, Any]:
        status = self.registrar.status.as_dict()
        status["token"] = {
            "set": self.tokens.is_set,
            "source": self.tokens.source,
            "fingerprint": self.tokens.fingerprint,
        }
        return status

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        settings = self.settings
        async with AsyncExitStack() as stack:
            self.nc = await bus.connect(
                settings.nats_url, f"gateway {settings.gateway_replica}", reconnected=self._back
            )
            stack.push_async_callback(bus.close, self.nc)
            js = self.nc.jetstream()
            await bus.ensure_stream(js, bus.audit_stream_config(settings))
            replicas = settings.nats_replicas
            auth_kv = await bus.ensure_kv(js, names.AUTH_BUCKET, history=5, replicas=replicas)
            nonces_kv = await bus.ensure_kv(
                js, names.APPROVALS_BUCKET, ttl=timedelta(seconds=2 * self.state_ttl), replicas=replicas
            )
            spool = Spool(settings.spool_dir)
            stack.callback(spool.close)
            self.publisher = AuditPublisher(self.nc, spool)
            self.audit = AuditClient(settings.audit_addr)
            stack.push_async_callback(self.audit.close)
            approvals = Approvals(
                wait_seconds=settings.hitl_approval_wait_seconds,
                progress_interval=settings.hitl_progress_interval_seconds,
                nonces=KvNonces(nonces_kv, settings.gateway_replica),
            )
            gate = Gate(
                mode=settings.management_approval,
                approvals=approvals,
                audit=self.publisher,
                replica=settings.gateway_replica,
            )
            self.monitor = MonitorContribution(self.audit, self.management_status)
            self.tools = tools.connect(settings.tools_addr, stack, self.registry)
            self.knowledge = knowledge.connect(settings.knowledge_addr, stack, self.registry)
            areas = [area for area in (self.tools, self.knowledge) if area is not None]
            contributions: list[Contribution] = [self.monitor, *areas]
            contributions.extend(self._extra(self) if self._extra else [])
            self.registrar = Registrar(
                policy=Policy(
                    enabled=settings.management_enabled,
                    categories=settings.categories,
                    exclude=frozenset(settings.management_exclude),
                    transport=settings.mcp_server_transport,
                    home=settings.home,
                    approval=settings.management_approval,
                    wait_seconds=settings.hitl_approval_wait_seconds,
                ),
                contributions=contributions,
                token_set=lambda: self.tokens.is_set,
                gate=gate,
                registry=self.registry,
                notifier=self.notifier,
            )
            records = KvTokenRecords(auth_kv)
            self.token_service = TokenService(self.tokens, records, self.registrar.refresh)
            await self.token_service.applied(await records.get())
            await self.registrar.refresh()
            published = PublishedTools(approvals=approvals, audit=self.publisher, replica=settings.gateway_replica)
            buckets = {}
            for area in areas:  # each area's client also lists and calls the tools its service serves
                serving = area.client.serving
                source = PublishedSource(
                    client=area.client, serving=serving, registry=self.registry, notifier=self.notifier, gate=published
                )
                self.published.append(source)
                buckets[serving.name] = await bus.ensure_kv(js, serving.bucket, history=5, replicas=replicas)
            publish_build_info("gateway")
            async with anyio.create_task_group() as group:
                group.start_soon(self.publisher.flush_forever)
                group.start_soon(self._keep_watching, self._follow_tokens(records), "token")
                for source in self.published:
                    group.start_soon(source.keep_listing)
                    group.start_soon(
                        self._keep_watching,
                        self._follow_bucket(source, buckets[source.serving.name]),
                        source.serving.name,
                    )
                self.publisher.wake()
                try:
                    yield self
                finally:
                    group.cancel_scope.cancel()

    async def _back(self) -> None:
        """NATS is back: flush the spool, and start every watch over (changes may have happened meanwhile)."""
        self.publisher.wake()
        for event in list(self._reconnected):
            event.set()

    async def _keep_watching(self, follow: Callable[[], Awaitable[None]], what: str) -> None:
        """Run a watch for the gateway's life; start it over after a NATS reconnect or a failure."""
        while True:
            again = anyio.Event()
            self._reconnected.add(again)
            try:
                async with anyio.create_task_group() as group:

                    async def watch(again: anyio.Event) -> None:
                        try:
                            await follow()
                        except Exception:
                            logger.exception("watch failed; restarting it", extra={"watch": what})
                            await anyio.sleep(1)
                        again.set()

                    group.start_soon(watch, again)
                    await again.wait()
                    group.cancel_scope.cancel()
            finally:
                self._reconnected.discard(again)

    def _follow_tokens(self, records: KvTokenRecords) -> Callable[[], Awaitable[None]]:
        async def follow() -> None:
            async for record in records.watch():
                await self.token_service.applied(record)

        return follow

    @staticmethod
    def _follow_bucket(source: PublishedSource, kv: KeyValue) -> Callable[[], Awaitable[None]]:
        async def follow() -> None:
            source.changed()  # a reconnect may have hidden changes
            await source.follow(kv)

        return follow

    async def health(self) -> dict[str, str]:
        checks = {
            "nats": "ok" if self.nc.is_connected else "unreachable",
            "audit": "ok" if await self.audit.healthy() else "unreachable",
        }
        for source in self.published:
            checks[source.serving.name] = "ok" if await source.client.healthy() else "unreachable"
        return checks


def create_app(gateway: Gateway) -> FastAPI:
    settings = gateway.settings
    mcp_app = gateway.mcp.streamable_http_app(
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=settings.gateway_allowed_hosts,
            allowed_origins=[f"http://{host}" for host in settings.gateway_allowed_hosts]
            + [f"https://{host}" for host in settings.gateway_allowed_hosts],
        ),
        session_idle_timeout=SESSION_IDLE_SECONDS,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with gateway.running(), gateway.mcp.session_manager.run():
            logger.info("gateway ready", extra={"port": settings.gateway_port, "replica": settings.gateway_replica})
            yield

    app = FastAPI(
        title="saip gateway",
        version=VERSION,
        description="The person's REST API: the same methods the AI reaches through the saip_* tools.",
        lifespan=lifespan,
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
    )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        checks = await gateway.health()
        healthy = all(value == "ok" for value in checks.values())
        return JSONResponse({"status": "ok" if healthy else "unavailable", "checks": checks}, 200 if healthy else 503)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    app.add_exception_handler(GatewayError, lambda _, exc: api.error_response(exc))
    app.include_router(api.router(gateway))
    app.mount("/", McpGuard(mcp_app, gateway.tokens))
    app.add_middleware(RequestMetrics)
    return app


class RequestMetrics:
    """Counts and times REST API and health requests by route template (MCP requests have their own metrics)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/mcp"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # Routing records the matched route in the scope; its template is a bounded label.
            route = getattr(scope.get("route"), "path", "") or "unmatched"
            metrics.HTTP_REQUESTS.labels(route, scope["method"], str(status)).inc()
            metrics.HTTP_REQUEST_SECONDS.labels(route, scope["method"]).observe(time.perf_counter() - started)


async def serve_http(settings: GatewaySettings, extra: Callable[[Gateway], list[Contribution]] | None = None) -> None:
    gateway = Gateway(settings, extra)
    config = uvicorn.Config(
        create_app(gateway),
        host=settings.gateway_host,
        port=settings.gateway_port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=3,
        lifespan="on",
    )
    await uvicorn.Server(config).serve()


async def serve_stdio(settings: GatewaySettings) -> None:
    """The same server over stdin/stdout: published tools only (the registrar's stdio blocker holds)."""
    gateway = Gateway(settings)
    async with gateway.running(), stdio_server() as (read, write):
        await gateway.mcp.run(read, write, gateway.mcp.create_initialization_options())


async def serve(settings: GatewaySettings) -> None:
    if settings.mcp_server_transport is Transport.STDIO:
        await serve_stdio(settings)
    else:
        await serve_http(settings)
