"""The mcp area: the upstream MCP servers saip knows, read-only (saip_mcp_list_servers, _catalog_search,
_preview_risk, _server_tools) and `saip://status/servers`. Registering is the opt-in mcp-register area."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from saip.common.words import plural
from saip.gateway.areas.mcp import views
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.errors import ServiceRefused
from saip.gateway.surface.declare import Declared, resource, tool
from saip.gateway.surface.management import Input, Level, ListedName, ListedValue, ManagementResult
from saip.v1 import upstream_pb2 as pb

TRANSPORTS = {word: value for value, word in views.TRANSPORTS.items()}
TRUSTS = {word: value for value, word in views.TRUSTS.items()}
LISTED = 30  # tools a server_tools message names; the data holds them all
ServerId = Field(min_length=1, max_length=63, pattern=r"^[a-z][a-z0-9-]*$", description="The server's id.")


class ServerIdInput(Input):
    serverId: str = ServerId


class CatalogSearchInput(Input):
    query: str = Field(default="", max_length=200, description="Words to look for; empty lists the whole catalog.")


class ServerInput(Input):
    """A custom server's definition: the fields of docs/upstream.md."""

    id: str = ServerId
    name: str = Field(default="", max_length=100, description="A display name (the id when empty).")
    transport: Literal["streamable-http", "sse", "stdio"] = Field(description="How saip talks to it.")
    url: str = Field(default="", max_length=2000, description="The endpoint (streamable-http and sse).")
    command: str = Field(default="", max_length=500, description="The program to run (stdio).")
    args: list[ListedValue] = Field(default_factory=list, max_length=50, description="Its arguments (stdio).")
    headers: dict[ListedName, ListedValue] = Field(
        default_factory=dict,
        max_length=50,
        description="HTTP headers, each a ${ENV_NAME} reference ('Bearer ${TOKEN}').",
    )
    env: dict[ListedName, ListedValue] = Field(
        default_factory=dict,
        max_length=50,
        description="Environment of the stdio process, each a ${ENV_NAME} reference.",
    )
    docsUrl: str = Field(default="", max_length=2000, description="Where its documentation is (a missing one scores).")
    description: str = Field(default="", max_length=1000, description="What it is for.")

    def proto(self) -> pb.Server:
        return pb.Server(
            id=self.id,
            name=self.name,
            transport=TRANSPORTS[self.transport],
            url=self.url,
            command=self.command,
            args=self.args,
            headers=self.headers,
            env=self.env,
            docs_url=self.docsUrl,
            trust=pb.TRUST_UNSPECIFIED,
            source=pb.SERVER_SOURCE_CUSTOM,
            description=self.description,
        )


class PreviewInput(Input):
    serverId: str | None = Field(default=None, max_length=63, description="A registered server.")
    catalogName: str | None = Field(default=None, max_length=100, description="Or a catalog entry.")
    server: ServerInput | None = Field(default=None, description="Or a custom definition not registered yet.")

    def proto(self) -> pb.PreviewRiskRequest:
        given = [value for value in (self.serverId, self.catalogName, self.server) if value is not None]
        if len(given) != 1:
            raise ServiceRefused("Give exactly one of serverId, catalogName or server.")
        return pb.PreviewRiskRequest(
            server_id=self.serverId or "",
            catalog_name=self.catalogName or "",
            server=self.server.proto() if self.server else None,
        )


class McpArea(Declared):
    category = "mcp"

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client

    @tool(Level.READ, "List upstream servers", idempotent=True)
    async def list_servers(self) -> ManagementResult:
        """The registered upstream MCP servers: transport, URL or command, connection state (and why it failed),
        the server's name and version, how many tools it lists, and its risk level with the reasons."""
        found = [views.status(status) for status in await self.client.servers()]
        if not found:
            return ManagementResult(
                True, "No upstream servers yet. saip_mcp_catalog_search finds some; read saip://guide/proxy.", data=[]
            )
        words = ", ".join(f"{s['id']} ({s['state']}, {s['risk']})" for s in found[:20])
        return ManagementResult(True, f"{plural(len(found), 'upstream server')}: {words}.", data=found)

    @tool(Level.READ, "Search the server catalog", idempotent=True)
    async def catalog_search(self, arguments: CatalogSearchInput) -> ManagementResult:
        """The curated catalog shipped with saip, searched by words: name, description, transport, URL or command,
        vendor or community trust, docs URL, and the ${ENV} variables each needs. Register one with
        saip_mcp_add_from_catalog (when mcp-register is on)."""
        found = [views.catalog_entry(entry) for entry in await self.client.catalog(arguments.query)]
        if not found:
            message = f"No catalog entry matches '{arguments.query}'; try other words, or an empty query for them all."
            return ManagementResult(True, message, data=found)
        names = ", ".join(f"{entry['name']} ({entry['trust']})" for entry in found)
        return ManagementResult(True, f"{plural(len(found), 'catalog entry', 'catalog entries')}: {names}.", data=found)

    @tool(Level.READ, "Preview a server's risk", idempotent=True)
    async def preview_risk(self, arguments: PreviewInput) -> ManagementResult:
        """The risk level a server has or would have (a registered one, a catalog entry, or a custom definition)
        with each reason and whether a floor rule set it; for a registered server, each tool's level too. Exposed
        tools above the cap (L3 by default) are refused. Changes nothing."""
        found = views.preview(await self.client.preview(arguments.proto()))
        floor = " (a floor rule)" if found["floor"] else ""
        return ManagementResult(True, f"Risk {found['risk']}{floor}: {'; '.join(found['reasons'])}.", data=found)

    @tool(Level.READ, "List a server's tools", idempotent=True)
    async def server_tools(self, arguments: ServerIdInput) -> ManagementResult:
        """The tools a registered server lists right now, each with its annotations, inherent risk level (the
        higher of its own and its server's), poisoning-scan hits and fingerprint state."""
        found = await self.client.server_tools(arguments.serverId)
        tools = [views.upstream_tool(listed) for listed in found.tools]
        state = views.STATES.get(found.status.state, "unknown")
        data = {"server": views.status(found.status), "tools": tools}
        if not tools:  # why not, when it is not connected
            why = f" ({found.status.reason})" if found.status.reason else ""
            return ManagementResult(True, f"'{arguments.serverId}' is {state}{why} and lists no tools.", data=data)
        words = ", ".join(f"{t['name']} ({t['risk']})" for t in tools[:LISTED])
        more = f" and {len(tools) - LISTED} more" if len(tools) > LISTED else ""
        message = f"'{arguments.serverId}' is {state} and lists {plural(len(tools), 'tool')}: {words}{more}."
        return ManagementResult(True, message, data=data)

    @resource("saip://status/servers", "Upstream servers status", mime_type="application/json")
    async def status_json(self) -> str:
        """The registered upstream servers with connection state and risk; JSON, fresh on every read."""
        return json.dumps([views.status(status) for status in await self.client.servers()], indent=2, sort_keys=True)
