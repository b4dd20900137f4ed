"""Wiring: one gateway replica's collaborators and its lifespan (`Gateway.running`); its HTTP app is `app`, its own
methods of the person's API are `operations`.

A `Gateway` is built without I/O: every area of `AREAS` is opened over the gateway's one channel to its service (a
channel connects on first use). `running()` connects NATS, opens the audit publisher, the registrar, the credentials
/mcp accepts and their watches (`credentials.access`), the list_changed fan-out, and for each area whose service is
configured its share of the management surface and of the published tools; it closes them in reverse. How the process
serves it (HTTP or stdio) is `saip.gateway.process`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from importlib.metadata import version
from typing import Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.kv import KeyValue
from prometheus_client import CollectorRegistry

from saip.common import bus, jetstream, names, telemetry, tracing
from saip.common.metrics import publish_build_info
from saip.common.watch import Restarts, keep_alive
from saip.gateway.approval_store import KvNonces, KvQuestions
from saip.gateway.areas import AREAS
from saip.gateway.areas.base import OpenArea, Service, Surroundings
from saip.gateway.areas.monitor import views as monitor_views
from saip.gateway.areas.monitor.client import AuditClient
from saip.gateway.areas.services import AUDIT
from saip.gateway.auth import TokenService, TokenState
from saip.gateway.clients import AuditPublisher, KvTokenRecords, ServiceChannel
from saip.gateway.config import GatewaySettings
from saip.gateway.console import signouts
from saip.gateway.console.feed import BUCKET_TOPICS, Feed
from saip.gateway.console.session import Sessions
from saip.gateway.console.signouts import SignOuts
from saip.gateway.console.sources import follow_bucket, follow_connections, follow_trail
from saip.gateway.credentials.access import ClientAccess
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.operations import GatewayOperations
from saip.gateway.person_trail import PersonTrail
from saip.gateway.spool import Spool
from saip.gateway.surface.asking import Approvals
from saip.gateway.surface.audited import Auditor
from saip.gateway.surface.gate import Gate
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import Contribution
from saip.gateway.surface.mcp_server import LegacySessions, ListChangedNotifier, build_server
from saip.gateway.surface.published import PublishedSource, source_of
from saip.gateway.surface.published_gate import PublishedTools
from saip.gateway.surface.questions import OutOfBand, Sweeper
from saip.gateway.surface.registrar import Policy, Registrar
from saip.gateway.surface.registry import Registry, ServedTool
from saip.gateway.surface.served import ServedToolsClient
from saip.v1 import audit_pb2

logger = logging.getLogger(__name__)

VERSION = version("saip-gateway")

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
        # Every credential /mcp accepts, where its requests come to, their use; OAuth when it is on.
        self.access = ClientAccess(settings, self.tokens)
        self.registry = Registry(self.metrics)
        self.sessions = LegacySessions(self.metrics)
        self.bus = InMemorySubscriptionBus()
        self.notifier = ListChangedNotifier(self.bus, self.sessions)
        self.loopback_secret = secrets.token_urlsafe(32)
        # The person's changes through the REST API, on the trail once the gateway runs (its auditor set then).
        self.trail = PersonTrail()
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
        self.operations = GatewayOperations(
            replica=settings.gateway_replica,
            version=VERSION,
            management_status=self.management_status,
            published=self.published_tools,
            health=self.health,
            token_service=lambda: self.token_service,
            out_of_band=lambda: self.out_of_band,
            credentials=self.access.status,
        )
        # The console: its sessions (the same on every replica with the same keys) and its live feed.
        self.console_sessions = Sessions(
            sealing_key=settings.approval_sealing_key.get_secret_value(),
            admin_token=settings.admin_token.get_secret_value(),
            idle_seconds=settings.console_idle_minutes * 60,
            lifetime_seconds=settings.console_session_hours * 3600,
        )
        self.feed = Feed()
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
        self.signouts: SignOuts

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

    def published_tools(self) -> list[dict[str, str]]:
        """What /mcp serves beside the management tools, by name: each tool's title, description and source."""
        found = []
        for service in self.services:
            if service.serves is None:
                continue
            for name in self.registry.tool_names(source_of(service.name)):
                served = self.registry.tool(name)
                if served is not None:
                    definition = served.definition
                    described = {"title": definition.title or "", "description": definition.description or ""}
                    found.append({"name": name, **described, "source": service.name})
        return sorted(found, key=lambda tool: tool["name"])

    def published_tool(self, name: str) -> ServedTool | None:
        """A tool a serving service publishes on /mcp (never a management tool)."""
        for service in self.services:
            if service.serves is not None and name in self.registry.tool_names(source_of(service.name)):
                return self.registry.tool(name)
        return None

    async def bucket(self, name: str) -> KeyValue:
        """A bucket of this replica's NATS connection, created on first use with the configured copies."""
        return await jetstream.ensure_kv(self.nc.jetstream(), name, history=1, replicas=self.settings.nats_replicas)

    def management_status(self) -> dict[str, Any]:
        status = self.registrar.status.as_dict()
        status["token"] = {
            "set": self.tokens.is_set,
            "source": self.tokens.source,
            "fingerprint": self.tokens.fingerprint,
        }
        status["credentials"] = self.access.status()
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
            # Asked for at once: each is a JetStream round trip, which one after the other would add up on the start's
            # critical path (docs/BENCHMARKS.md, "Cold start").
            _, _, auth_kv, nonces_kv, questions_kv, sessions_kv = await asyncio.gather(
                jetstream.ensure_stream(js, jetstream.audit_stream_config(settings)),
                jetstream.ensure_stream(js, telemetry.logs_stream_config(replicas)),
                jetstream.ensure_kv(js, names.AUTH_BUCKET, history=5, replicas=replicas),
                jetstream.ensure_kv(js, names.APPROVALS_BUCKET, ttl=ttl, replicas=replicas),
                jetstream.ensure_kv(js, names.QUESTIONS_BUCKET, ttl=ttl, replicas=replicas),
                signouts.bucket(js, self.console_sessions.lifetime, replicas),
            )
            self.signouts = SignOuts(sessions_kv, self.console_sessions)
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
                min_answer=settings.management_min_answer_ms / 1000,
            )
            auditor = self.trail.auditor = Auditor(
                sink=self.publisher,
                replica=settings.gateway_replica,
                metrics=self.metrics,
                questions=questions,
                usage=self.access.usage,
            )
            self.sweeper = Sweeper(
                store=questions,
                nonces=nonces,
                sink=self.publisher,
                metrics=self.metrics,
                replica=settings.gateway_replica,
            )
            self.out_of_band = OutOfBand(
                store=questions,
                sweeper=self.sweeper,
                enabled=settings.management_out_of_band_approvals,
                answers=self._answers,
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
            await self.access.open(js, self.token_service, self.registrar.refresh)
            await self.registrar.refresh()
            watches: list[tuple[Follow, str]] = [
                (functools.partial(self._follow_tokens, records), "token"),
                *self.access.watches(self.registrar.refresh),
                (self.sweeper.follow, "questions"),
                (self.signouts.follow, "console sign-outs"),
                (functools.partial(follow_trail, self.nc, self.feed), "console audit trail"),
                (functools.partial(follow_connections, self.nc, self.feed), "console connection states"),
            ]
            watches += [
                (functools.partial(follow_bucket, js, bucket, topic, self.feed), f"console {bucket}")
                for bucket, topic in BUCKET_TOPICS.items()
            ]
            watches += await self._published(js, PublishedTools(approvals=approvals, auditor=auditor))
            publish_build_info("gateway", self.metrics.registry)
            async with anyio.create_task_group() as group:
                group.start_soon(self.publisher.flush_forever)
                group.start_soon(self.sweeper.sweep_forever)
                group.start_soon(self.notifier.deliver_forever)
                group.start_soon(self.access.count_forever)
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
                kv = await jetstream.ensure_kv(js, bucket, history=5, replicas=self.settings.nats_replicas)
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
            authenticated=lambda: self.access.credentials.required,
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

    async def _answers(self, recent: int) -> list[dict[str, Any]]:
        """The recent answers to every question, newest first, as the audit trail keeps them (the inbox's)."""
        reply = await AuditClient(self.channels[AUDIT.addressed]).hitl(audit_pb2.GetHitlSummaryRequest(recent=recent))
        return [monitor_views.decision(entry) for entry in reply.recent]
