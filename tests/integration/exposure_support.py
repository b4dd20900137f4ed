"""Shared by the integration tests that serve an upstream's tools on /mcp (it holds no tests itself): registering a
test upstream and exposing one of its tools as the person does, through the areas' own methods (the REST API's)."""

from __future__ import annotations

from saip.gateway.areas.expose.contribution import ApplyInput, ExposeArea
from saip.gateway.areas.mcp.contribution import McpArea
from saip.gateway.areas.mcp_register.contribution import CustomAddInput, McpRegisterArea
from saip.gateway.server import Gateway
from tests.waiting import eventually


async def exposed(gateway: Gateway, server_id: str, url: str, name: str, *, hitl: bool = False) -> None:
    """Register the upstream at `url` and serve its tool `name` (without HITL unless `hitl`), as the person does (the
    REST API's methods), until /mcp lists it."""
    tools = next(area for area in gateway.areas if area.name == "expose").contribution
    servers = next(area for area in gateway.areas if area.name == "mcp-register").contribution
    assert isinstance(tools, ExposeArea) and isinstance(servers, McpRegisterArea)
    server = {"id": server_id, "transport": "streamable-http", "url": url, "docsUrl": "https://x.test"}
    await servers.add_custom(CustomAddInput.model_validate({"server": server}))
    await eventually(lambda: upstream_connected(gateway))
    change = ApplyInput.model_validate({"add": [{"serverId": server_id, "tool": name, "hitl": hitl}]})
    planned = await tools.plan_change(change)
    await tools.apply(change, planned.expected)
    await eventually(lambda: gateway.registry.tool(name) is not None)


async def upstream_connected(gateway: Gateway) -> bool:
    """Whether the first registered upstream server is connected (its tools listed)."""
    mcp = next(area for area in gateway.areas if area.name == "mcp").contribution
    assert isinstance(mcp, McpArea)
    listed = await mcp.list_servers()
    return bool(listed.data) and listed.data[0]["state"] == "connected"
