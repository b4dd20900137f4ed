"""The mcp-register area (opt-in): registering, testing and removing upstream MCP servers, for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.areas.mcp_register import rest
from saip.gateway.areas.mcp_register.contribution import McpRegisterArea
from saip.gateway.areas.services import UPSTREAM

AREA = Area(
    service=UPSTREAM,
    contribution=lambda channel, surroundings: McpRegisterArea(UpstreamClient(channel)),
    router=rest.router,
)
