"""The mcp-register area (opt-in: offered only when `management.tools` lists it): registering and connecting upstream
MCP servers. Its tools are named as the mcp area's (saip_mcp_test_connection, _reconnect, _add_from_catalog,
_add_custom, _remove_server). Every registration's question names the transport, the URL or the stdio command and
the risk; one of inherent risk L4 or more is a high-risk action (always asks; refused under `none`).
"""

from __future__ import annotations

from pydantic import Field

from saip.gateway.areas.mcp import views
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.areas.mcp.contribution import ServerId, ServerIdInput, ServerInput
from saip.gateway.errors import ServiceRefused
from saip.gateway.surface.declare import Declared, tool
from saip.gateway.surface.expected import NOTHING, Expected, Read
from saip.gateway.surface.management import (
    MAX_INTEGER,
    Approval,
    Input,
    Level,
    ListedName,
    ListedValue,
    ManagementResult,
)
from saip.v1 import upstream_pb2 as pb

# The risk level from which a registration is a high-risk action (the seed's gate table: L4 and above).
HIGH_RISK = 4


class TestInput(Input):
    serverId: str | None = Field(default=None, max_length=63, description="A registered server.")
    server: ServerInput | None = Field(default=None, description="Or a definition to try without registering it.")

    def proto(self) -> pb.TestConnectionRequest:
        if (self.serverId is None) == (self.server is None):
            raise ServiceRefused("Give either serverId (a registered server) or server (a definition), not both.")
        return pb.TestConnectionRequest(
            server_id=self.serverId or "", server=self.server.proto() if self.server else None
        )


class CatalogAddInput(Input):
    catalogName: str = Field(min_length=1, max_length=100, description="The entry's name (saip_mcp_catalog_search).")
    serverId: str | None = Field(default=None, max_length=63, description="The id to register it under (its name).")
    headers: dict[ListedName, ListedValue] = Field(
        default_factory=dict, max_length=50, description="Header overrides, ${ENV_NAME} references."
    )
    env: dict[ListedName, ListedValue] = Field(
        default_factory=dict, max_length=50, description="Environment overrides, ${ENV_NAME} references."
    )

    def proto(self) -> pb.AddServerRequest:
        server = pb.Server(id=self.serverId or "", headers=self.headers, env=self.env)
        return pb.AddServerRequest(catalog_name=self.catalogName, server=server)


class CustomAddInput(Input):
    server: ServerInput = Field(description="The server's definition.")


class RemoveInput(Input):
    serverId: str = ServerId
    expectedRevision: int = Field(
        default=0, ge=0, le=MAX_INTEGER, description="The revision you read; 0 for whatever it is now."
    )


class McpRegisterArea(Declared):
    category = "mcp-register"
    naming = "mcp"

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client

    async def _registration(self, verb: str, request: pb.PreviewRiskRequest, server: pb.Server) -> Approval:
        preview = await self.client.preview(request)
        summary = (
            f"{verb} '{server.id or server.name}' ({views.where(server)}) at inherent risk L{preview.risk_level}: "
            f"{'; '.join(preview.reasons)}"
        )
        return Approval(Level.DESTRUCTIVE, summary, high_risk=preview.risk_level >= HIGH_RISK)

    async def plan_test(self, arguments: TestInput) -> Approval:
        request = arguments.proto()
        target = request.server if request.HasField("server") else None
        what = views.where(target) if target is not None else f"the registered server '{arguments.serverId}'"
        return Approval(Level.WRITE, f"connect once to {what} and list its tools (nothing is stored)")

    @tool(Level.WRITE, "Test an upstream connection", planner=plan_test)
    async def test_connection(self, arguments: TestInput) -> ManagementResult:
        """Connect once to a registered server or to a definition (not stored), list its tools and disconnect: what
        the server says it is, its protocol version, its tools with their risk, or why it could not connect."""
        found = await self.client.test(arguments.proto())
        return ManagementResult(found.ok, found.message, data=views.report(found))

    @tool(
        Level.WRITE, "Reconnect an upstream server", summary=lambda a: f"reconnect the upstream server '{a.serverId}'"
    )
    async def reconnect(self, arguments: ServerIdInput) -> ManagementResult:
        """Drop a server's connection and connect again now (after the person set a variable it needed, or fixed
        the server); the answer is its state after the attempt."""
        found = views.status(await self.client.reconnect(arguments.serverId))
        reason = f" ({found['reason']})" if found["reason"] else ""
        return ManagementResult(True, f"'{arguments.serverId}' is {found['state']}{reason}.", data=found)

    async def plan_catalog(self, arguments: CatalogAddInput) -> Approval:
        listed = await self.client.catalog(arguments.catalogName)
        entry = next((found for found in listed if found.name == arguments.catalogName), None)
        if entry is None:
            raise ServiceRefused(f"No catalog entry '{arguments.catalogName}'; call saip_mcp_catalog_search.")
        server = pb.Server(
            id=arguments.serverId or entry.name,
            transport=entry.transport,
            url=entry.url,
            command=entry.command,
            args=entry.args,
        )
        return await self._registration(
            "register the catalog server", pb.PreviewRiskRequest(catalog_name=arguments.catalogName), server
        )

    @tool(Level.DESTRUCTIVE, "Add a server from the catalog", planner=plan_catalog)
    async def add_from_catalog(self, arguments: CatalogAddInput) -> ManagementResult:
        """Register a catalog server; saip connects to it at once and keeps the connection. Headers and env are
        ${ENV_NAME} references the person sets for the tools service. The person approves first."""
        return registered(await self.client.add(arguments.proto()))

    async def plan_custom(self, arguments: CustomAddInput) -> Approval:
        server = arguments.server.proto()
        return await self._registration("register the custom server", pb.PreviewRiskRequest(server=server), server)

    @tool(Level.DESTRUCTIVE, "Add a custom server", planner=plan_custom)
    async def add_custom(self, arguments: CustomAddInput) -> ManagementResult:
        """Register a server that is not in the catalog (unknown trust): streamable-http or sse with a URL, or
        stdio with a command saip runs as its child. Literal secrets are refused: use ${ENV_NAME} references.
        saip's own /mcp is refused, and so are cloud metadata and link-local addresses. The person approves."""
        return registered(await self.client.add(pb.AddServerRequest(server=arguments.server.proto())))

    async def plan_remove(self, arguments: RemoveInput) -> Approval:
        found = next((s for s in await self.client.servers() if s.server.id == arguments.serverId), None)
        if found is None:
            raise ServiceRefused(f"No upstream server '{arguments.serverId}'; saip_mcp_list_servers lists them.")
        return Approval(
            Level.DESTRUCTIVE,
            f"remove the upstream server '{arguments.serverId}' ({views.where(found.server)}); its exposed tools "
            "leave /mcp at once",
            # The server the question names, as it read it: one changed meanwhile (another URL, say) is not removed.
            expected=Expected.of(Read(found.server.id, f"the server '{found.server.id}'", found.server.revision)),
        )

    @tool(Level.DESTRUCTIVE, "Remove an upstream server", planner=plan_remove)
    async def remove_server(self, arguments: RemoveInput, expected: Expected = NOTHING) -> ManagementResult:
        """Remove a registered server: its connection closes (a stdio server is stopped) and its exposed tools leave
        /mcp. Servers declared in configuration cannot be removed here. The person approves first."""
        revision = arguments.expectedRevision or expected.revision(arguments.serverId, 0)
        reply = await self.client.remove(arguments.serverId, revision)
        withdrawn = f"; {', '.join(reply.withdrawn)} left /mcp" if reply.withdrawn else ""
        message = f"Removed the upstream server '{reply.server_id}'{withdrawn}."
        data = {"serverId": reply.server_id, "withdrawn": list(reply.withdrawn)}
        return ManagementResult(True, message, persisted=True, data=data)


def registered(found: pb.UpstreamStatus) -> ManagementResult:
    view = views.status(found)
    reason = f" ({view['reason']})" if view["reason"] else ""
    message = (
        f"Registered '{view['id']}' ({view['risk']}); it is {view['state']}{reason}. Next: saip_mcp_server_tools, "
        "then saip_expose_preview."
    )
    return ManagementResult(True, message, persisted=True, data=view)
