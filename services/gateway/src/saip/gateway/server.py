"""Wiring: one gateway replica's collaborators, its lifespan (`Gateway.running`), and its HTTP app (/mcp, /api/v1,
/healthz, /metrics).

A `Gateway` is built without I/O: every area of `AREAS` is opened over the gateway's one channel to its service (a
channel connects on first use). `running()` connects NATS, opens the audit publisher, the registrar, the token watch
and the list_changed fan-out, and for each area whose service is configured its share of the management surface and
of the published tools; it closes them in reverse. How the process serves it (HTTP or stdio) is `saip.gateway.serving`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from importlib.metadata import version
from typing import Any

import anyio
from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.server.transport_security import TransportSecuritySettings
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.kv import KeyValue
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from saip.common import bus, names, telemetry, tracing
from saip.common.metrics import publish_build_info
from saip.common.watch import Restarts, keep_alive
from saip.gateway import rest
from saip.gateway.areas import AREAS
from saip.gateway.areas.base import OpenArea, Service, Surroundings
from saip.gateway.auth import McpGuard, TokenService, TokenState
from saip.gateway.clients import AuditPublisher, KvNonces, KvQuestions, KvTokenRecords, ServiceChannel
from saip.gateway.config import GatewaySettings
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.spool import Spool
from saip.gateway.surface.approval import Approvals
from saip.gateway.surface.audited import Auditor
from saip.gateway.surface.gate import Gate
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import Contribution, ManagementResult
from saip.gateway.surface.mcp_server import LegacySessions, ListChangedNotifier, build_server
from saip.gateway.surface.published import PublishedSource, PublishedTools, ServedToolsClient, source_of
from saip.gateway.surface.questions import OutOfBand, Sweeper
from saip.gateway.surface.registrar import Policy, Registrar, described
from saip.gateway.surface.registry import Registry, ServedTool

logger = logging.getLogger(__name__)

VERSION = version("saip-gateway")
SESSION_IDLE_SECONDS = 30 * 60
MCP_PATH = "/mcp"

Extra = Callable[["Gateway"], list[Contribution]]
Follow = Callable[[], Awaitable[None]]


class Gateway:
    """Everything one gateway replica holds."""

    def __init__(
        self, settings: GatewaySettings, extra: Extra | None = None, *, registry: CollectorRegistry | None = None
    ) -> None:
        """`extra` adds contributions beside the areas' (the multi-replica tests add tools that ask); `registry` is
        where the metrics go (None: a registry of this gateway's own, as a gateway in a test beside others needs)."""
        self.settings = settings
        self._extra = extra
        self.metrics = GatewayMetrics(registry)
        self.tokens = TokenState(settings.configured_token)
        self.registry = Registry(self.metrics)
        self.sessions = LegacySessions(self.metrics)
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
            metrics=self.metrics,
            max_result_bytes=settings.mcp_server_max_result_bytes,
        )
        self.started = time.time()
        # One channel per service, whichever areas talk to it; one contribution and router per area.
        self.services = list(dict.fromkeys(area.service for area in AREAS if area.service is not None))
        self.channels = {
            service.addressed: ServiceChannel(
                service.addressed, settings.address(service.addressed), deadline=service.deadline
            )
            for service in self.services
        }
        self.areas: list[OpenArea] = [
            area.open(self._channel(area.service), self._surroundings(area.service)) for area in AREAS
        ]
        # A NATS reconnect restarts every watch: changes may have happened while this replica was cut off.
        self.restarts = Restarts()
        self.nc: NatsClient
        self.publisher: AuditPublisher
        self.registrar: Registrar
        self.calls: WindowLimit
        self.token_service: TokenService
        self.sweeper: Sweeper
        self.out_of_band: OutOfBand
        self.questions: KvQuestions

    def _channel(self, service: Service | None) -> ServiceChannel:
        """The channel to an area's service; an area that runs in the gateway gets one to nothing."""
        return self.channels[service.addressed] if service is not None else ServiceChannel("gateway", None)

    def _surroundings(self, service: Service | None) -> Surroundings:
        own = source_of(service.name) if service is not None else None
        return Surroundings(
            served_elsewhere=lambda: self.registry.served_names(excluding=own),
            management_status=self.management_status,
            settings=self.settings,
            published_tool=self.published_tool,
            bucket=self.bucket,
            jetstream=lambda: self.nc.jetstream(),
            health=self.health,
            channel=self.channels.get,
            questions=lambda: self.questions,
        )

    def _configured(self, service: Service | None) -> bool:
        return service is None or self.channels[service.addressed].configured

    def published_tool(self, name: str) -> ServedTool | None:
        """A tool a serving service publishes on /mcp (never a management tool)."""
        for service in self.services:
            if service.serves is not None and name in self.registry.tool_names(source_of(service.name)):
                return self.registry.tool(name)
        return None

    async def bucket(self, name: str) -> KeyValue:
        """A bucket of this replica's NATS connection, created on first use with the configured copies."""
        return await bus.ensure_kv(self.nc.jetstream(), name, history=1, replicas=self.settings.nats_replicas)

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
            self.nc = await stack.enter_async_context(
                bus.connection(settings.nats_url, f"gateway {settings.gateway_replica}", reconnected=self._back)
            )
            await stack.enter_async_context(tracing.traced(settings, self.nc))
            js = self.nc.jetstream()
            replicas = settings.nats_replicas
            ttl = timedelta(seconds=2 * self.state_ttl)
            # Asked for at once: each is a JetStream round trip, and they were five in a row on the start's critical
            # path (docs/BENCHMARKS.md, "Cold start").
            _, _, auth_kv, nonces_kv, questions_kv = await asyncio.gather(
                bus.ensure_stream(js, bus.audit_stream_config(settings)),
                bus.ensure_stream(js, telemetry.logs_stream_config(replicas)),
                bus.ensure_kv(js, names.AUTH_BUCKET, history=5, replicas=replicas),
                bus.ensure_kv(js, names.APPROVALS_BUCKET, ttl=ttl, replicas=replicas),
                bus.ensure_kv(js, names.QUESTIONS_BUCKET, ttl=ttl, replicas=replicas),
            )
            questions = self.questions = KvQuestions(questions_kv)
            spool = Spool(settings.spool_dir)
            stack.callback(spool.close)
            self.publisher = AuditPublisher(self.nc, spool, self.metrics)
            for channel in self.channels.values():
                stack.push_async_callback(channel.close)
            nonces = KvNonces(nonces_kv, settings.gateway_replica)
            approvals = Approvals(
                wait_seconds=settings.hitl_approval_wait_seconds,
                progress_interval=settings.hitl_progress_interval_seconds,
                nonces=nonces,
                metrics=self.metrics,
                questions=WindowLimit(settings.management_question_limit, settings.management_limit_window_seconds),
                pending=questions,
                out_of_band=settings.management_out_of_band_approvals,
            )
            auditor = Auditor(
                sink=self.publisher, replica=settings.gateway_replica, metrics=self.metrics, questions=questions
            )
            self.sweeper = Sweeper(
                store=questions,
                nonces=nonces,
                sink=self.publisher,
                metrics=self.metrics,
                replica=settings.gateway_replica,
            )
            self.out_of_band = OutOfBand(
                store=questions, sweeper=self.sweeper, enabled=settings.management_out_of_band_approvals
            )
            self.calls = WindowLimit(settings.management_rate_limit, settings.management_limit_window_seconds)
            self.registrar = self._registrar(
                Gate(
                    mode=settings.management_approval,
                    approvals=approvals,
                    auditor=auditor,
                    calls=self.calls,
                    metrics=self.metrics,
                )
            )
            records = KvTokenRecords(auth_kv)
            self.token_service = TokenService(self.tokens, records, self.registrar.refresh, self.metrics)
            await self.token_service.applied(await records.get())
            await self.registrar.refresh()
            watches: list[tuple[Follow, str]] = [
                (functools.partial(self._follow_tokens, records), "token"),
                (self.sweeper.follow, "questions"),
            ]
            watches += await self._published(js, PublishedTools(approvals=approvals, auditor=auditor))
            publish_build_info("gateway", self.metrics.registry)
            async with anyio.create_task_group() as group:
                group.start_soon(self.publisher.flush_forever)
                group.start_soon(self.sweeper.sweep_forever)
                group.start_soon(self.notifier.deliver_forever)
                for follow, what in watches:
                    group.start_soon(functools.partial(keep_alive, follow, what, restarts=self.restarts))
                self.publisher.wake()
                try:
                    yield self
                finally:
                    group.cancel_scope.cancel()

    async def _published(self, js: JetStreamContext, gate: PublishedTools) -> list[tuple[Follow, str]]:
        """A published source for each configured service that serves tools, and the two watches that keep it
        current: its listing, and its bucket."""
        watches: list[tuple[Follow, str]] = []
        for service in self.services:
            if service.serves is None or not self._configured(service):
                continue
            client = ServedToolsClient(
                self.channels[service.addressed],
                service.serves.grpc_service,
                service.name,
                streams=service.serves.streams,
            )
            source = PublishedSource(client=client, registry=self.registry, notifier=self.notifier, gate=gate)
            watches.append((source.keep_listing, f"{service.name} listing"))
            for bucket in service.serves.buckets:
                kv = await bus.ensure_kv(js, bucket, history=5, replicas=self.settings.nats_replicas)
                watches.append((functools.partial(source.follow, kv), f"{service.name} bucket {bucket}"))
        return watches

    def _registrar(self, gate: Gate) -> Registrar:
        """The registrar over the areas whose service is configured, and the extra contributions."""
        settings = self.settings
        contributions = [area.contribution for area in self.areas if self._configured(area.service)]
        contributions.extend(self._extra(self) if self._extra else [])
        return Registrar(
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
            metrics=self.metrics,
        )

    async def _back(self) -> None:
        """NATS is back: flush the spool, and start every watch over."""
        self.publisher.wake()
        self.restarts.now()

    async def _follow_tokens(self, records: KvTokenRecords) -> None:
        async for record in records.watch():
            await self.token_service.applied(record)

    async def health(self) -> dict[str, str]:
        checks = {"nats": "ok" if self.nc.is_connected else "unreachable"}
        asked = [(name, channel) for name, channel in self.channels.items() if channel.configured]
        # Every service at once: the launcher's first /healthz, which the connection lines wait for, opens each
        # channel, and one after the other those were the start's last serial wait.
        answers = await asyncio.gather(*(channel.healthy() for _, channel in asked))
        checks.update((name, "ok" if up else "unreachable") for (name, _), up in zip(asked, answers, strict=True))
        return checks

    # The gateway's own methods of the REST API (rest.Operations) and `saip status`, `saip token`, `saip approvals`.

    async def approvals(self) -> ManagementResult:
        return await self.out_of_band.waiting()

    async def answer_approval(self, question_id: str, approve: bool) -> ManagementResult:
        result = await self.out_of_band.answer(question_id, approve)
        logger.info("out-of-band approval answered", extra={"tool": result.data["tool"], "approved": approve})
        return result

    async def status(self, mcp_url: str) -> ManagementResult:
        management = self.management_status()
        services = await self.health()
        away = [name for name, state in services.items() if state != "ok"]
        data = {
            "gateway": {
                "replica": self.settings.gateway_replica,
                "version": VERSION,
                "uptimeSeconds": round(time.time() - self.started, 1),
            },
            "mcp": {"url": mcp_url, "token": management["token"]},
            "management": management,
            "services": services,
        }
        reach = f"unreachable: {', '.join(away)}" if away else "every service answers"
        return ManagementResult(True, f"Management surface {described(management)}; {reach}.", data=data)

    async def management(self) -> ManagementResult:
        status = self.management_status()
        return ManagementResult(True, f"Management surface {described(status)}.", data=status)

    async def rotate_token(self) -> ManagementResult:
        token = await self.token_service.rotate(created_by="api")
        logger.info("mcp token rotated through the api")
        message = "Generated a new MCP token; every replica requires it now. It is shown this once: keep it."
        return ManagementResult(True, message, persisted=True, data={"token": token})

    async def remove_token(self) -> ManagementResult:
        await self.token_service.remove()
        logger.info("mcp token removed through the api")
        message = "Removed the MCP token: /mcp serves published tools only, without the management tools."
        return ManagementResult(True, message, persisted=True, data={"removed": True})


def create_app(gateway: Gateway) -> ASGIApp:
    """The HTTP app: /mcp straight to the MCP transport (`McpFirst`), everything else to the REST app. The REST app's
    own lifespan opens the gateway, for an ASGI server that runs lifespans (a test's client); `saip.gateway.serving`
    opens the gateway itself and serves the app without it."""
    settings = gateway.settings
    mcp_app = gateway.mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
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
        async with opened(gateway):
            yield

    app = FastAPI(
        title="saip gateway",
        version=VERSION,
        description=(
            "The person's REST API: the same methods the AI reaches through the saip_* tools. Every answer is the "
            "envelope {ok, message, persisted, restartRequired, warnings, data}; the audit tail streams NDJSON."
        ),
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
        return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    rest.install(app)
    app.include_router(
        rest.router(
            admin_token=settings.admin_token.get_secret_value(),
            metrics=gateway.metrics,
            operations=gateway,
            areas=[area.router for area in gateway.areas],
        ),
        prefix=rest.PREFIX,
    )
    guarded = McpGuard(mcp_app, gateway.tokens, gateway.metrics)
    # Any other path the REST API does not route (`/mcp/`, which the MCP app redirects) still reaches the MCP app.
    app.mount("/", guarded)
    app.add_middleware(RequestMetrics, metrics=gateway.metrics)
    return McpFirst(app, guarded)


class McpFirst:
    """/mcp to the guarded MCP app at once, every other request (and the lifespan) to the REST app.

    Through the REST app an MCP request passed FastAPI's middleware and was matched against every REST route before
    the catch-all mount took it, on every call; none of that applies to /mcp (RequestMetrics leaves it out, the MCP
    app has its own error handling), so it is skipped.
    """

    def __init__(self, rest: ASGIApp, mcp: ASGIApp) -> None:
        self.rest = rest
        self._mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            await self._mcp(scope, receive, send)
        else:
            await self.rest(scope, receive, send)


@asynccontextmanager
async def opened(gateway: Gateway) -> AsyncIterator[Gateway]:
    """The gateway running, with the MCP session manager the HTTP transport needs."""
    async with gateway.running(), gateway.mcp.session_manager.run():
        logger.info(
            "gateway serving",
            extra={"port": gateway.settings.gateway_port, "replica": gateway.settings.gateway_replica},
        )
        yield gateway


class RequestMetrics:
    """Counts and times REST API and health requests by route template (MCP requests have their own metrics)."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self._metrics = metrics

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
            # Routing records the matched route in the scope; its template is a bounded label. A REST route's own
            # template is the one in the router under the API's prefix (`rest.router`), so the prefix is put back.
            route = getattr(scope.get("route"), "path", "") or "unmatched"
            if scope["path"].startswith(f"{rest.PREFIX}/") and route != "unmatched":
                route = rest.PREFIX + route
            self._metrics.http_requests.labels(route, scope["method"], str(status)).inc()
            self._metrics.http_request_seconds.labels(route, scope["method"]).observe(time.perf_counter() - started)
