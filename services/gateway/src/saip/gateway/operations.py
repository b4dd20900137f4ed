"""The gateway's own methods of the person's API (`rest.Operations`): its status (which credentials /mcp accepts
among it), the management surface's, the MCP token, and the out-of-band approvals; `saip status`, `saip token` and
`saip approvals` call them through REST."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from saip.gateway.auth import TokenService
from saip.gateway.surface.management import ManagementResult
from saip.gateway.surface.questions import OutOfBand
from saip.gateway.surface.registrar import described

logger = logging.getLogger(__name__)


class GatewayOperations:
    """One replica's answers; the token service and the out-of-band store exist once the replica runs."""

    def __init__(
        self,
        *,
        replica: str,
        version: str,
        management_status: Callable[[], dict[str, Any]],
        published: Callable[[], list[dict[str, str]]],
        health: Callable[[], Awaitable[dict[str, str]]],
        token_service: Callable[[], TokenService],
        out_of_band: Callable[[], OutOfBand],
        credentials: Callable[[], dict[str, Any]],
    ) -> None:
        self._replica = replica
        self._version = version
        self._started = time.time()
        self._management_status = management_status
        self._published = published
        self._health = health
        self._token_service = token_service
        self._out_of_band = out_of_band
        self._credentials = credentials

    async def approvals(self) -> ManagementResult:
        return await self._out_of_band().waiting()

    async def answer_approval(self, question_id: str, approve: bool, via: str) -> ManagementResult:
        """The person's answer to a question in the inbox, through `via` (their interface), which the record keeps."""
        result = await self._out_of_band().answer(question_id, approve, via)
        said = {"tool": result.data["tool"], "approved": approve, "interface": via}
        logger.info("out-of-band approval answered", extra=said)
        return result

    async def status(self, mcp_url: str) -> ManagementResult:
        management = self._management_status()
        services = await self._health()
        away = [name for name, state in services.items() if state != "ok"]
        data = {
            "gateway": {
                "replica": self._replica,
                "version": self._version,
                "uptimeSeconds": round(time.time() - self._started, 1),
            },
            "mcp": {
                "url": mcp_url,
                "token": management["token"],
                "credentials": self._credentials(),
                "published": self._published(),
            },
            "management": management,
            "services": services,
        }
        reach = f"unreachable: {', '.join(away)}" if away else "every service answers"
        return ManagementResult(True, f"Management surface {described(management)}; {reach}.", data=data)

    async def management(self) -> ManagementResult:
        status = self._management_status()
        return ManagementResult(True, f"Management surface {described(status)}.", data=status)

    async def rotate_token(self) -> ManagementResult:
        token = await self._token_service().rotate(created_by="api")
        logger.info("mcp token rotated through the api")
        message = "Generated a new MCP token; every replica requires it now. It is shown this once: keep it."
        return ManagementResult(True, message, persisted=True, data={"token": token})

    async def remove_token(self) -> ManagementResult:
        await self._token_service().remove()
        logger.info("mcp token removed through the api")
        message = "Removed the MCP token: /mcp serves published tools only, without the management tools."
        return ManagementResult(True, message, persisted=True, data={"removed": True})
