"""The mcp area: the upstream MCP servers saip knows and their risk, read-only, for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.mcp import rest
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.areas.mcp.contribution import McpArea
from saip.gateway.areas.mcp.monitor import McpMonitor
from saip.gateway.areas.mcp.monitor import router as monitor_router
from saip.gateway.areas.services import UPSTREAM

AREA = Area(
    service=UPSTREAM,
    contribution=lambda channel, surroundings: McpArea(UpstreamClient(channel)),
    router=rest.router,
)

# saip_monitor_mcp_status: a monitor tool over the upstream service, offered with the monitor category.
MONITOR = Area(
    service=UPSTREAM,
    contribution=lambda channel, surroundings: McpMonitor(UpstreamClient(channel)),
    router=monitor_router,
)
