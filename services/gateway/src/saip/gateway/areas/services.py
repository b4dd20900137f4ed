"""The saip services the gateway's areas talk to, one line each (`<name>.addr` in the gateway's settings holds the
address of each; an area names one of these)."""

from __future__ import annotations

from saip.common import names
from saip.gateway.areas.base import Publication, Service

AUDIT = Service("audit", deadline=5.0)
TOOLS = Service("tools", serves=Publication("saip.v1.ToolsService", names.TOOLS_BUCKET))
KNOWLEDGE = Service("knowledge", serves=Publication("saip.v1.KnowledgeService", names.KNOWLEDGE_BUCKET))
SHIPYARD = Service("shipyard")
# The upstream MCP servers and their composition: a second gRPC service of the tools process, at `tools.addr`.
UPSTREAM = Service(
    "upstream",
    host="tools",
    serves=Publication("saip.v1.UpstreamService", names.SERVERS_BUCKET, also=(names.LEDGER_BUCKET,), streams=True),
)
