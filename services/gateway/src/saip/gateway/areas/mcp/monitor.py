"""saip_monitor_mcp_status: the monitor's view of the upstream servers and the exposed tools, in one answer. A
contribution of the monitor category over the upstream service (the monitor area itself talks to the audit
service), offered with the other monitor tools."""

from __future__ import annotations

from fastapi import APIRouter

from saip.gateway.areas.expose import views as expose_views
from saip.gateway.areas.mcp import views
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.rest import Call, area_router
from saip.gateway.surface.declare import Declared, tool
from saip.gateway.surface.management import Level, ManagementResult


class McpMonitor(Declared):
    category = "monitor"

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client

    @tool(Level.READ, "Upstream MCP status", idempotent=True)
    async def mcp_status(self) -> ManagementResult:
        """The upstream servers by connection state (and why each failed), and the exposed upstream tools: how many
        are served on /mcp and which are withheld and why (a changed definition awaiting re-review, a server gone)."""
        servers = [views.status(status) for status in await self.client.servers()]
        exposure = expose_views.composition(await self.client.composition())
        states: dict[str, int] = {}
        for server in servers:
            states[server["state"]] = states.get(server["state"], 0) + 1
        withheld = [tool for tool in exposure["tools"] if not tool["served"]]
        counts = ", ".join(f"{count} {state}" for state, count in sorted(states.items())) or "none registered"
        message = (
            f"Upstream servers: {counts}. Exposed tools: {len(exposure['tools']) - len(withheld)} served, "
            f"{len(withheld)} withheld" + (f" ({', '.join(tool['name'] for tool in withheld)})" if withheld else "")
        )
        return ManagementResult(True, message + ".", data={"servers": servers, "exposure": exposure})


def router(area: McpMonitor) -> APIRouter:
    """The person reads the same under /api/v1/servers/status."""
    return area_router(
        "/servers/status", {"GET": Call(area.mcp_status, "Upstream servers by state and the exposed tools")}
    )
