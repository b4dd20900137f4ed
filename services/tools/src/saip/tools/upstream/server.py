"""Wiring of the upstream side of the tools service: the servicer of saip.v1.UpstreamService (one-line RPC methods
over `servers`, `exposure` and `proxy`) and `opened`, which the tools lifespan enters: the saip-servers and
saip-ledger buckets, the connections and the parked calls (a task group of their own), the watch of saip-servers
that keeps the connections in step with the registry on every replica, the subject of forwarded resumes, and the news
of each connection's state change.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from saip.common import jetstream, names
from saip.common.watch import Restarts, keep_alive
from saip.tools.clients import HISTORY, WatchedRecords
from saip.tools.config import UPSTREAM_SERVERS_KEY, ToolsSettings
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import RiskSink
from saip.tools.statuses import EDGE
from saip.tools.upstream import catalog, client, registry, relay
from saip.tools.upstream.exposure import Composer
from saip.tools.upstream.ledger import Ledger
from saip.tools.upstream.news import ConnectionNews
from saip.tools.upstream.parking import Parking
from saip.tools.upstream.proxy import Proxy
from saip.tools.upstream.servers import Servers
from saip.v1 import common_pb2, upstream_pb2, upstream_pb2_grpc

SERVICE_NAME = "saip.v1.UpstreamService"
_unary = EDGE.unary


@dataclass(frozen=True)
class Upstream:
    servers: Servers
    composer: Composer
    proxy: Proxy
    parking: Parking
    buckets: tuple[WatchedRecords, ...]  # what the served tools are listed from: the servers' records and the ledger


class UpstreamServicer(upstream_pb2_grpc.UpstreamServiceServicer):
    """saip.v1.UpstreamService over the servers, the composition and the proxy (an RPC it does not implement is the
    generated base's UNIMPLEMENTED)."""

    def __init__(self, upstream: Upstream) -> None:
        self._servers = upstream.servers
        self._composer = upstream.composer
        self._proxy = upstream.proxy
        self._parking = upstream.parking
        self._buckets = upstream.buckets

    @_unary
    async def ListServers(
        self, request: upstream_pb2.ListServersRequest, context: Any
    ) -> upstream_pb2.ListServersReply:
        return upstream_pb2.ListServersReply(servers=await self._servers.statuses())

    @_unary
    async def SearchCatalog(
        self, request: upstream_pb2.SearchCatalogRequest, context: Any
    ) -> upstream_pb2.SearchCatalogReply:
        return upstream_pb2.SearchCatalogReply(entries=catalog.search(request.query))

    @_unary
    async def PreviewRisk(self, request: upstream_pb2.PreviewRiskRequest, context: Any) -> upstream_pb2.RiskPreview:
        return await self._servers.preview(request)

    @_unary
    async def GetServerTools(
        self, request: upstream_pb2.GetServerToolsRequest, context: Any
    ) -> upstream_pb2.ServerTools:
        return await self._servers.server_tools(request.server_id)

    @_unary
    async def TestConnection(
        self, request: upstream_pb2.TestConnectionRequest, context: Any
    ) -> upstream_pb2.ConnectionReport:
        return await self._servers.test(request.server_id, request.server)

    @_unary
    async def Reconnect(self, request: upstream_pb2.ReconnectRequest, context: Any) -> upstream_pb2.UpstreamStatus:
        return await self._servers.reconnect(request.server_id)

    @_unary
    async def AddServer(self, request: upstream_pb2.AddServerRequest, context: Any) -> upstream_pb2.UpstreamStatus:
        return await self._servers.add(request.server, request.catalog_name)

    @_unary
    async def RemoveServer(
        self, request: upstream_pb2.RemoveServerRequest, context: Any
    ) -> upstream_pb2.RemoveServerReply:
        removed = await self._servers.remove(request.server_id, request.expected_revision)
        return upstream_pb2.RemoveServerReply(server_id=removed.id, withdrawn=await self._composer.withdraw(removed.id))

    @_unary
    async def GetComposition(
        self, request: upstream_pb2.GetCompositionRequest, context: Any
    ) -> upstream_pb2.CompositionView:
        return await self._composer.view()

    @_unary
    async def PlanExposure(self, request: upstream_pb2.ExposureChange, context: Any) -> upstream_pb2.ExposurePlan:
        return await self._composer.plan(request, list(request.taken))

    @_unary
    async def ApplyExposure(
        self, request: upstream_pb2.ApplyExposureRequest, context: Any
    ) -> upstream_pb2.ExposureApplied:
        change = request.change
        return await self._composer.apply(change, dict(request.acknowledged_hashes), list(change.taken))

    @_unary
    async def ListServedTools(
        self, request: common_pb2.ListServedToolsRequest, context: Any
    ) -> common_pb2.ListServedToolsReply:
        # As of every write made so far (`WatchedRecords.current`): the gateway lists as soon as its watch shows one.
        for bucket in self._buckets:
            await bucket.current()
        return common_pb2.ListServedToolsReply(tools=await self._proxy.served())

    @_unary
    async def CallServedTool(
        self, request: common_pb2.CallServedToolRequest, context: Any
    ) -> common_pb2.CallServedToolReply:
        return await self._proxy.call(request.name, request.arguments_json)

    # Both ways (`upstream.relay`): the call and its answers in, its progress, questions and reply out, written as
    # they come (`context.write`, grpc.aio's other form of a stream, which the generated stub does not know).
    @_unary
    async def CallServedToolStream(  # type: ignore[override]
        self, requests: AsyncIterator[common_pb2.ServedToolInput], context: Any
    ) -> None:
        await relay.relayed(self._proxy, self._parking, requests, context.write)


def limits(settings: ToolsSettings) -> client.Limits:
    return client.Limits(
        connect_timeout=settings.tools_upstream_connect_timeout_seconds,
        call_timeout=settings.tools_upstream_call_timeout_seconds,
        max_result_bytes=settings.tools_upstream_max_result_bytes,
        max_response_bytes=settings.tools_upstream_max_response_bytes,
        max_tools=settings.tools_upstream_max_tools,
        refresh_seconds=settings.tools_upstream_refresh_seconds,
        gateway_urls=tuple(settings.tools_upstream_gateway_urls),
        variables=settings.upstream_variables(os.environ),
    )


@asynccontextmanager
async def opened(
    settings: ToolsSettings,
    nc: NatsClient,
    js: JetStreamContext,
    risk: RiskSink,
    metrics: ToolsMetrics,
    restarts: Restarts,
) -> AsyncIterator[Upstream]:
    """The upstream side running: its buckets, the connection of every registered server, the registry's watch, and
    the subject other replicas forward resumes of this one's parked calls to."""
    declared = registry.declared(settings.tools_upstream_servers, UPSTREAM_SERVERS_KEY)
    servers_kv = await jetstream.ensure_kv(js, names.SERVERS_BUCKET, history=HISTORY, replicas=settings.nats_replicas)
    ledger_kv = await jetstream.ensure_kv(js, names.LEDGER_BUCKET, history=HISTORY, replicas=settings.nats_replicas)
    # Like Tool Studio's bucket, each is listed from the watch the service keeps (a listing leaves no consumer).
    records = WatchedRecords(servers_kv, js, bucket=names.SERVERS_BUCKET)
    fingerprints = WatchedRecords(ledger_kv, js, bucket=names.LEDGER_BUCKET)
    news = ConnectionNews(nc)
    servers = Servers(
        registry.Registry(records, declared, UPSTREAM_SERVERS_KEY),
        Ledger(fingerprints, risk, metrics),
        risk,
        metrics,
        limits(settings),
        moved=news.moved,
    )
    composer = Composer(records, servers, risk, metrics, settings.expose_risk_cap)
    async with anyio.create_task_group() as group:
        for watched, what in ((records, "upstream servers bucket"), (fingerprints, "ledger bucket")):
            group.start_soon(functools.partial(keep_alive, watched.watch, what, restarts=restarts))
        await records.ready()
        await fingerprints.ready()
        group.start_soon(news.tell_forever)
        servers.connections.start(group)
        follow = functools.partial(_follow, servers, servers_kv)
        group.start_soon(functools.partial(keep_alive, follow, "upstream servers", restarts=restarts))
        proxy = Proxy(composer, servers, metrics)
        parking = Parking(
            proxy,
            group,
            metrics,
            most=settings.tools_upstream_parked_max,
            within=settings.tools_upstream_call_timeout_seconds,
            nc=nc,
        )
        group.start_soon(parking.serve)
        try:
            yield Upstream(servers, composer, proxy, parking, (records, fingerprints))
        finally:
            servers.connections.close()
            group.cancel_scope.cancel()


async def _follow(servers: Servers, kv: KeyValue) -> None:
    """Connect to what is registered now, and again after every change of a server record (any replica's)."""
    await servers.sync()
    watcher = await kv.watch(f"{registry.SERVER_PREFIX}>")
    try:
        async for _entry in watcher:
            await servers.sync()
    finally:
        await watcher.stop()  # type: ignore[no-untyped-call]
