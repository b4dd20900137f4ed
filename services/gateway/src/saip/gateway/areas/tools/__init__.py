"""The tools area: Tool Studio (authored tools, their Local Pass, publishing, exposure) for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.services import TOOLS
from saip.gateway.areas.tools import rest
from saip.gateway.areas.tools.client import ToolsClient
from saip.gateway.areas.tools.contribution import ToolsArea

AREA = Area(
    service=TOOLS,
    contribution=lambda channel, surroundings: ToolsArea(ToolsClient(channel), surroundings.served_elsewhere),
    router=rest.router,
)
