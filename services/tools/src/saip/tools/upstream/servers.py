"""The servers as the `mcp` and `mcp-register` areas see them: status, risk preview, tools, test, add, remove,
reconnect; and what happens on every listing a connection makes (the ledger, the risk events).

Each risk computation is a `server-risk-computed` event (and `floor-override-triggered` when a floor set the level)
when the server's level or reasons change; a tool whose description trips the poisoning scan is a `poisoning-hit`
once per definition. Both are raised once whatever the number of replicas and restarts: the ledger keeps what was
last raised and which definitions it has seen, and only the replica whose write recorded the news raises it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import anyio
from google.protobuf.timestamp_pb2 import Timestamp

from saip.common.risk import INFO, POISONING_HIT, WARN
from saip.common.words import plural
from saip.tools.errors import InvalidSpec, OwnMcp, RuleRefused, ToolsError
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import RiskSink
from saip.tools.upstream import catalog, client, risk
from saip.tools.upstream.connections import Connections, Live, Moved, describe
from saip.tools.upstream.ledger import Ledger, as_tool
from saip.tools.upstream.registry import Registry, validate
from saip.v1 import upstream_pb2

logger = logging.getLogger(__name__)

SERVER_RISK_COMPUTED = "server-risk-computed"
FLOOR_OVERRIDE_TRIGGERED = "floor-override-triggered"


class Servers:
    def __init__(
        self,
        registry: Registry,
        ledger: Ledger,
        risk_sink: RiskSink,
        metrics: ToolsMetrics,
        limits: client.Limits,
        moved: Moved | None = None,
    ) -> None:
        self.registry = registry
        self.ledger = ledger
        self._risk = risk_sink
        self._metrics = metrics
        self.connections = Connections(limits, self.listed, moved)
        self._reach: dict[tuple[str, int], risk.Reach] = {}
        self._scored: dict[str, risk.Score] = {}
        # What each server's last listing recorded, so a listing reads the ledger only for definitions that changed.
        self._recorded: dict[str, dict[str, str]] = {}

    # What every listing does.

    async def listed(self, server: upstream_pb2.Server, live: Live) -> None:
        """A connection listed the server's tools: the ledger sees them, the risk is computed and raised."""
        recorded = self._recorded.get(server.id, {})
        fresh = dict(live.hashes)
        changed = [name for name, digest in fresh.items() if recorded.get(name) != digest]
        await self.observe(server.id, live, changed)
        self._recorded[server.id] = fresh
        score = await self.score(server, live)
        if self._scored.get(server.id) != score:
            self._scored[server.id] = score
            summary = f"Server '{server.id}' is {score.label}: {'; '.join(score.reasons)}"
            if await self.ledger.risk_changed(server.id, summary):
                await self._risk.publish(SERVER_RISK_COMPUTED, INFO, summary, subject=server.id)
                if score.floor:
                    await self._risk.publish(FLOOR_OVERRIDE_TRIGGERED, WARN, summary, subject=server.id)

    async def observe(self, server_id: str, live: Live, names: Iterable[str]) -> None:
        """The ledger sees these of the listed definitions; each it records as news (first sight, or a change now
        awaiting review) is scanned for poisoning, and a hit raised: once, whichever replica or path saw it first."""
        observed = await self.ledger.observe(server_id, [live.tools[name] for name in names])
        others = list(live.tools)
        for name in sorted(observed.news):
            tool = as_tool(live.tools[name])
            hits = risk.poisoning(tool, others)
            if hits:
                self._metrics.poisoning_hits.inc()
                await self._risk.publish(
                    POISONING_HIT,
                    WARN,
                    f"The definition of '{name}' on upstream server '{server_id}' tripped the poisoning scan "
                    f"({', '.join(hits)}); exposed, every call of it asks the person.",
                    reason=hits[0],
                    subject=f"{server_id}::{name}",
                )

    # Risk.

    async def where(self, server: upstream_pb2.Server) -> risk.Reach:
        """Where the server is (cached per definition revision: a DNS lookup per listing is not needed)."""
        cached = self._reach.get((server.id, server.revision))
        if cached is None or not server.revision:
            cached = await client.check_target(server, self.connections.limits)
            if server.revision:
                self._reach[(server.id, server.revision)] = cached
        return cached

    async def score(self, server: upstream_pb2.Server, live: Live | None = None) -> risk.Score:
        tools = [as_tool(definition) for definition in (live.tools.values() if live else ())]
        writes = any(not tool.read_only for tool in tools) if tools else None
        return risk.server_score(server, await self.where(server), writes=writes)

    def tools_of(
        self, server_score: risk.Score, definitions: Iterable[dict[str, Any]]
    ) -> list[upstream_pb2.UpstreamTool]:
        """Each listed tool with its inherent level (its own and its server's) and its poisoning hits."""
        listed = list(definitions)
        others = [definition["name"] for definition in listed]
        tools = []
        for definition in listed:
            tool = as_tool(definition)
            level = risk.inherent(server_score, risk.tool_score(tool))
            tool.risk_level = level.level
            tool.risk_reasons.extend(level.reasons)
            tool.poisoning.extend(risk.poisoning(tool, others))
            tools.append(tool)
        return tools

    # The RPCs.

    async def statuses(self) -> list[upstream_pb2.UpstreamStatus]:
        return [await self.status(server) for server in await self.registry.servers()]

    async def status(self, server: upstream_pb2.Server) -> upstream_pb2.UpstreamStatus:
        live = self.connections.live(server.id)
        try:
            score = await self.score(server, live)
        except RuleRefused as exc:
            score = risk.Score(5, (str(exc),), floor=True)
        since = Timestamp()
        since.FromNanoseconds(int(live.since * 1e9))
        return upstream_pb2.UpstreamStatus(
            server=server,
            state=live.state,
            reason=live.reason,
            server_name=live.server_name,
            server_version=live.server_version,
            protocol_version=live.protocol,
            capabilities=live.capabilities,
            tool_count=len(live.tools),
            risk_level=score.level,
            risk_reasons=score.reasons,
            since=since,
        )

    async def server_tools(self, server_id: str) -> upstream_pb2.ServerTools:
        server = await self.registry.get(server_id)
        live = self.connections.live(server_id)
        status = await self.status(server)
        score = risk.Score(status.risk_level, tuple(status.risk_reasons))
        for tool in (tools := self.tools_of(score, live.tools.values())):
            row = await self.ledger.read(server_id, tool.name)
            tool.fingerprint = row.status if row else upstream_pb2.FINGERPRINT_STATUS_UNSPECIFIED
        return upstream_pb2.ServerTools(status=status, tools=tools)

    async def preview(self, request: upstream_pb2.PreviewRiskRequest) -> upstream_pb2.RiskPreview:
        server, live = await self._target(request.server_id, request.catalog_name, request.server)
        score = await self.score(server, live)
        tools = self.tools_of(score, live.tools.values()) if live else []
        return upstream_pb2.RiskPreview(risk_level=score.level, reasons=score.reasons, floor=score.floor, tools=tools)

    async def test(self, server_id: str, server: upstream_pb2.Server) -> upstream_pb2.ConnectionReport:
        """Connect once, list the tools, disconnect; the report says what the upstream is, or why it failed."""
        target, _ = await self._target(server_id, "", server)
        live = Live()
        limits = self.connections.limits
        try:
            with anyio.fail_after(limits.connect_timeout * 2):
                async with client.connect(target, limits) as opened:
                    describe(live, opened)
                    live.listing(await client.list_definitions(opened, limits, target.id))
        except ToolsError:
            raise
        except Exception as exc:  # the upstream's failure is the report, not ours
            return upstream_pb2.ConnectionReport(
                ok=False, message=f"Could not connect to '{target.id}': {client.failure(exc)}."
            )
        score = await self.score(target, live)
        return upstream_pb2.ConnectionReport(
            ok=True,
            message=(
                f"Connected to '{target.id}' ({live.server_name} {live.server_version}, protocol {live.protocol}): "
                f"{plural(len(live.tools), 'tool')}, risk {score.label}."
            ),
            server_name=live.server_name,
            server_version=live.server_version,
            protocol_version=live.protocol,
            tools=self.tools_of(score, live.tools.values()),
            risk_level=score.level,
            risk_reasons=score.reasons,
        )

    async def add(self, server: upstream_pb2.Server, catalog_name: str) -> upstream_pb2.UpstreamStatus:
        if catalog_name:
            found = catalog.entry(catalog_name)
            if found is None:
                raise InvalidSpec(f"No catalog entry '{catalog_name}'; call saip_mcp_catalog_search to find one.")
            chosen = catalog.server_of(found, server.id)
            chosen.headers.update(server.headers)
            chosen.env.update(server.env)
            server = chosen
        else:
            server.source = upstream_pb2.SERVER_SOURCE_CUSTOM
            server.catalog_name = ""
        validate(server)
        await self._not_saip(server)
        stored = await self.registry.add(server)
        await self.sync()
        return await self.status(stored)

    async def _not_saip(self, server: upstream_pb2.Server) -> None:
        """Refuse saip's own /mcp, whatever address points at it: by URL, and by the handshake of one connection
        when it can be made now (a server that cannot be reached yet is registered, its state says why)."""
        limits = self.connections.limits
        await client.check_target(server, limits)
        # The SDK's client side is imported first, outside the handshake's time: on a busy machine its import alone
        # may take a good part of the connect timeout, which would register saip's own /mcp unrecognised.
        await client.client_side()
        try:
            with anyio.fail_after(limits.connect_timeout):
                async with client.connect(server, limits):
                    pass
        except OwnMcp:
            raise
        except Exception as exc:  # the upstream's failure (or an unset variable) is its state once registered
            logger.info(
                "registered upstream not reachable yet", extra={"server": server.id, "reason": client.failure(exc)}
            )

    async def remove(self, server_id: str, expected_revision: int) -> upstream_pb2.Server:
        removed = await self.registry.remove(server_id, expected_revision)
        await self.sync()
        return removed

    async def reconnect(self, server_id: str) -> upstream_pb2.UpstreamStatus:
        server = await self.registry.get(server_id)
        connection = await self.connections.reconnect(server)
        # The answer says how the new attempt went, within the connect timeout.
        with anyio.move_on_after(self.connections.limits.connect_timeout):
            await connection.settled.wait()
        return await self.status(server)

    async def sync(self) -> None:
        await self.connections.sync(await self.registry.servers())

    async def _target(
        self, server_id: str, catalog_name: str, server: upstream_pb2.Server
    ) -> tuple[upstream_pb2.Server, Live | None]:
        """The server a preview or a test is about: registered (with what its connection listed), from the catalog,
        or a definition given whole."""
        if server_id:
            registered = await self.registry.get(server_id)
            return registered, self.connections.live(server_id)
        if catalog_name:
            found = catalog.entry(catalog_name)
            if found is None:
                raise InvalidSpec(f"No catalog entry '{catalog_name}'; call saip_mcp_catalog_search to find one.")
            return catalog.server_of(found), None
        if not server.id:
            raise InvalidSpec("Name the server: a server id, a catalog name, or a whole definition.")
        return validate(server), None
