"""The person's view of the upstream servers under /api/v1/servers: the same methods the saip_mcp_* tools call."""

from __future__ import annotations

from fastapi import APIRouter

from saip.gateway.areas.mcp.contribution import McpArea
from saip.gateway.rest import Call, area_router


def router(area: McpArea) -> APIRouter:
    return area_router(
        "/servers",
        {
            "GET": Call(area.list_servers, "Registered upstream servers with state and risk"),
            "GET /catalog": Call(area.catalog_search, "The shipped catalog of upstream servers, searched by words"),
            "POST /risk": Call(
                area.preview_risk, "The risk of a registered server, a catalog entry or a custom definition"
            ),
            "GET /{serverId}/tools": Call(
                area.server_tools,
                "A server's tools with their risk, poisoning hits and fingerprint state",
            ),
        },
    )
