"""The gateway's areas, one package each: its contribution (tools, resources, prompts, guides), its REST router, its
gRPC client and its views. A new area is one folder and one line here (docs/architecture.md, "How to add an area")."""

from __future__ import annotations

from typing import Any

from saip.gateway.areas import chat, expose, knowledge, mcp, mcp_register, monitor, shipyard, tools
from saip.gateway.areas.base import Area

# In the order /mcp lists their tools and /healthz their services.
AREAS: tuple[Area[Any], ...] = (
    monitor.AREA,
    mcp.MONITOR,
    tools.AREA,
    mcp.AREA,
    mcp_register.AREA,
    expose.AREA,
    knowledge.AREA,
    shipyard.AREA,
    chat.AREA,
)
