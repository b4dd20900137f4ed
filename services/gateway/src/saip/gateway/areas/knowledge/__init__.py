"""The knowledge area: documents, pipelines, search and knowledge tools, for the AI and the person."""

from __future__ import annotations

from saip.gateway.areas.base import Area
from saip.gateway.areas.knowledge import rest
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.areas.services import KNOWLEDGE

AREA = Area(
    service=KNOWLEDGE,
    contribution=lambda channel, surroundings: KnowledgeArea(KnowledgeClient(channel), surroundings.served_elsewhere),
    router=rest.router,
)
