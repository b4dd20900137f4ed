"""The person's view of the upstream servers under /api/v1/servers: the same methods the saip_mcp_* tools call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from saip.gateway.areas.mcp.contribution import CatalogSearchInput, McpArea, PreviewInput, ServerIdInput
from saip.gateway.rest import Envelope, area_router

ServerIdPath = Annotated[str, Path(min_length=1, max_length=63, description="The server's id")]


def router(area: McpArea) -> APIRouter:
    api = area_router("/servers", {"": ("Registered upstream servers with state and risk", area.list_servers)})

    @api.get("/catalog", summary="The shipped catalog of upstream servers, searched by words")
    async def catalog(query: Annotated[str, Query(max_length=200)] = "") -> Envelope:
        return Envelope.of(await area.catalog_search(CatalogSearchInput(query=query)))

    @api.post("/risk", summary="The risk of a registered server, a catalog entry or a custom definition")
    async def preview_risk(body: PreviewInput) -> Envelope:
        return Envelope.of(await area.preview_risk(body))

    @api.get("/{serverId}/tools", summary="A server's tools with their risk, poisoning hits and fingerprint state")
    async def server_tools(serverId: ServerIdPath) -> Envelope:
        return Envelope.of(await area.server_tools(ServerIdInput(serverId=serverId)))

    return api
