"""The shipyard area: shipped servers (validate, ship, run, status, logs, stop, delete), for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.services import SHIPYARD
from saip.gateway.areas.shipyard import rest
from saip.gateway.areas.shipyard.client import ShipyardClient
from saip.gateway.areas.shipyard.contribution import ShipyardArea

AREA = Area(
    service=SHIPYARD,
    contribution=lambda channel, surroundings: ShipyardArea(ShipyardClient(channel)),
    router=rest.router,
)
