"""Registering upstream servers under /api/v1/servers: the same methods the saip_mcp_* registration tools call,
without the gate (the admin token is the person's own authority; the REST API offers them whether or not the AI's
mcp-register category is on)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from saip.gateway.areas.mcp.contribution import ServerIdInput, ServerInput
from saip.gateway.areas.mcp_register.contribution import (
    CatalogAddInput,
    CustomAddInput,
    McpRegisterArea,
    RemoveInput,
    TestInput,
)
from saip.gateway.rest import Envelope, area_router

ServerIdPath = Annotated[str, Path(min_length=1, max_length=63, description="The server's id")]


def router(area: McpRegisterArea) -> APIRouter:
    api = area_router("/servers", {})

    @api.post("", summary="Register a custom server")
    async def add_custom(body: ServerInput) -> Envelope:
        return Envelope.of(await area.add_custom(CustomAddInput(server=body)))

    @api.post("/catalog", summary="Register a server from the catalog")
    async def add_from_catalog(body: CatalogAddInput) -> Envelope:
        return Envelope.of(await area.add_from_catalog(body))

    @api.post("/test", summary="Connect once to a registered server or a definition, and list its tools")
    async def test_connection(body: TestInput) -> Envelope:
        return Envelope.of(await area.test_connection(body))

    @api.post("/{serverId}/reconnect", summary="Drop a server's connection and connect again now")
    async def reconnect(serverId: ServerIdPath) -> Envelope:
        return Envelope.of(await area.reconnect(ServerIdInput(serverId=serverId)))

    @api.delete("/{serverId}", summary="Remove a registered server (its exposed tools leave /mcp)")
    async def remove_server(
        serverId: ServerIdPath,
        expectedRevision: Annotated[int, Query(ge=0)] = 0,
    ) -> Envelope:
        return Envelope.of(await area.remove_server(RemoveInput(serverId=serverId, expectedRevision=expectedRevision)))

    return api
