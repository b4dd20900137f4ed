"""Registering upstream servers under /api/v1/servers: the same methods the saip_mcp_* registration tools call,
without the gate (the admin token is the person's own authority; the REST API offers them whether or not the AI's
mcp-register category is on)."""

from __future__ import annotations

from fastapi import APIRouter

from saip.gateway.areas.mcp.contribution import ServerInput
from saip.gateway.areas.mcp_register.contribution import CustomAddInput, McpRegisterArea
from saip.gateway.rest import Call, Envelope, area_router


def router(area: McpRegisterArea) -> APIRouter:
    api = area_router(
        "/servers",
        {
            "POST /catalog": Call(area.add_from_catalog, "Register a server from the catalog"),
            "POST /test": Call(
                area.test_connection,
                "Connect once to a registered server or a definition, and list its tools",
            ),
            "POST /{serverId}/reconnect": Call(area.reconnect, "Drop a server's connection and connect again now"),
            "DELETE /{serverId}": Call(area.remove_server, "Remove a registered server (its exposed tools leave /mcp)"),
        },
    )

    @api.post("", summary="Register a custom server")
    async def add_custom(body: ServerInput) -> Envelope:
        return Envelope.of(await area.add_custom(CustomAddInput(server=body)))

    return api
