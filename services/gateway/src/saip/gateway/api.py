"""The person's REST API under /api/v1 (admin token only): the same methods the AI reaches through saip_* tools."""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from saip.gateway import knowledge_api, metrics, tools_api, views
from saip.gateway.auth import bearer
from saip.gateway.contributions.monitor import (
    HitlInput,
    ManagementLogInput,
    OutcomeName,
    RiskEventsInput,
    ToolCallsInput,
)
from saip.gateway.errors import GatewayError, ServiceRefused, ServiceUnavailable, TokenManagedByConfiguration

if TYPE_CHECKING:
    from saip.gateway.server import Gateway

logger = logging.getLogger(__name__)

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="saip-admin"'}

Limit = Annotated[int, Query(ge=1, le=500, description="How many entries (1 to 500)")]
Before = Annotated[int, Query(ge=0, description="0 for the newest; otherwise the nextCursor of the previous page")]


def router(gateway: Gateway) -> APIRouter:
    admin_token = gateway.settings.admin_token.get_secret_value()

    async def require_admin(authorization: Annotated[str | None, Header()] = None) -> None:
        presented = bearer(authorization)
        if presented is None or not hmac.compare_digest(presented.encode(), admin_token.encode()):
            metrics.AUTH_REJECTED.labels("api").inc()
            raise HTTPException(
                401, "The REST API needs the admin token: send 'Authorization: Bearer <admin token>'.", CHALLENGE
            )

    api = APIRouter(prefix="/api/v1", dependencies=[Depends(require_admin)])

    @api.get("/status", summary="The gateway, its token, the management surface and the services it depends on")
    async def status(request: Request) -> dict[str, Any]:
        return {
            "gateway": {
                "replica": gateway.settings.gateway_replica,
                "version": gateway.mcp.version,
                "uptimeSeconds": round(time.time() - gateway.started, 1),
            },
            "mcp": {"url": str(request.base_url) + "mcp", "token": gateway.management_status()["token"]},
            "management": gateway.management_status(),
            "services": await gateway.health(),
        }

    @api.get("/management/status", summary="Whether the management tools are offered, and the reason when not")
    async def management_status() -> dict[str, Any]:
        return gateway.management_status()

    @api.post("/mcp-token", summary="Generate (or rotate) the MCP bearer token; the token is shown once")
    async def rotate_token() -> dict[str, str]:
        token = await gateway.token_service.rotate(created_by="api")
        logger.info("mcp token rotated through the api")
        return {"token": token}

    @api.delete("/mcp-token", summary="Remove the MCP bearer token (the management surface goes away)")
    async def remove_token() -> dict[str, bool]:
        await gateway.token_service.remove()
        logger.info("mcp token removed through the api")
        return {"removed": True}

    @api.get("/audit/overview", summary="Recent management outcomes, risk events, the audit chain")
    async def audit_overview() -> Any:
        return (await gateway.monitor.overview()).data

    @api.get("/audit/management-log", summary="Management calls, newest first")
    async def management_log(
        limit: Limit = 20,
        before: Before = 0,
        tool: Annotated[str | None, Query(max_length=128)] = None,
        outcome: OutcomeName | None = None,
    ) -> Any:
        arguments = ManagementLogInput(limit=limit, before=before, tool=tool, outcome=outcome)
        return (await gateway.monitor.management_log(arguments)).data

    @api.get("/audit/tool-calls", summary="Published tool calls, newest first")
    async def tool_calls(
        limit: Limit = 20, before: Before = 0, tool: Annotated[str | None, Query(max_length=128)] = None
    ) -> Any:
        return (await gateway.monitor.tool_calls(ToolCallsInput(limit=limit, before=before, tool=tool))).data

    @api.get("/audit/risk-events", summary="Risk events, newest first")
    async def risk_events(
        limit: Limit = 20, before: Before = 0, type: Annotated[str | None, Query(max_length=64)] = None
    ) -> Any:
        return (await gateway.monitor.risk_events(RiskEventsInput(limit=limit, before=before, type=type))).data

    @api.get("/audit/hitl", summary="Approval decisions by side and decision, and the approval rate")
    async def hitl(recent: Annotated[int, Query(ge=1, le=100)] = 10) -> Any:
        return (await gateway.monitor.hitl(HitlInput(recent=recent))).data

    @api.get("/audit/verify", summary="Walk the audit hash chain and report the first broken link")
    async def verify() -> Any:
        return views.verify(await gateway.audit.verify())

    @api.get("/audit/tail", summary="The last entries, then every new one as it is chained (NDJSON)")
    async def tail(backlog: Annotated[int, Query(ge=1, le=500)] = 20) -> StreamingResponse:
        async def lines() -> AsyncIterator[bytes]:
            async for entry in gateway.audit.tail(backlog):
                yield (json.dumps(views.record(entry), ensure_ascii=False) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    api.include_router(tools_api.router(gateway))
    api.include_router(knowledge_api.router(gateway))
    return api


def error_response(exc: GatewayError) -> JSONResponse:
    """One place that turns the gateway's errors into HTTP answers whose text says what to do instead."""
    status = 400
    if isinstance(exc, TokenManagedByConfiguration):
        status = 409
    elif isinstance(exc, ServiceUnavailable):
        status = 503
    elif isinstance(exc, ServiceRefused):
        status = 400
    return JSONResponse({"error": str(exc)}, status)
