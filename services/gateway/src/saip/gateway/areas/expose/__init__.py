"""The expose area: upstream tools composed onto saip's /mcp, with HITL, the cap and the fingerprint ledger."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.expose import rest
from saip.gateway.areas.expose.contribution import ExposeArea
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.areas.services import UPSTREAM

AREA = Area(
    service=UPSTREAM,
    contribution=lambda channel, surroundings: ExposeArea(UpstreamClient(channel), surroundings.served_elsewhere),
    router=rest.router,
)
