"""The monitor area: the audit trail, the management surface's own state, the processes and NATS, and the services'
logs, for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.monitor import rest
from saip.gateway.areas.monitor.client import AuditClient
from saip.gateway.areas.monitor.contribution import MonitorArea
from saip.gateway.areas.monitor.system import System
from saip.gateway.areas.services import AUDIT

AREA = Area(
    service=AUDIT,
    contribution=lambda channel, surroundings: MonitorArea(
        AuditClient(channel),
        surroundings.management_status,
        System(surroundings.jetstream, surroundings.health, surroundings.channel),
    ),
    router=rest.router,
)
