"""The consent screen's routes under /api/v1/oauth: the authorization request the console shows, and the person's
answer to it. Each answer's data.redirect is where the browser goes next (back to the client)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import Field

from saip.gateway.credentials.identity import Grant
from saip.gateway.oauth.consent import Consent
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import Input

RequestId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class Approval(Input):
    """POST /oauth/requests/{id}/approve: which of the two grants the client gets."""

    grant: Literal["tools", "manage"] = Field(
        description="tools: the published tools only; manage: the management surface (saip_* tools) as well"
    )


def router(consent: Callable[[], Consent]) -> APIRouter:
    """`consent` is the running gateway's."""
    api = area_router("/oauth", {})

    @api.get("/requests/{request_id}", summary="An authorization request waiting for consent: who asks, for what")
    async def request(request_id: RequestId) -> Envelope:
        return Envelope.of(await consent().request(request_id))

    @api.post("/requests/{request_id}/approve", summary="Approve it with a grant; data.redirect goes to the client")
    async def approve(request_id: RequestId, body: Approval) -> Envelope:
        return Envelope.of(await consent().approve(request_id, Grant(body.grant)))

    @api.post("/requests/{request_id}/deny", summary="Deny it; data.redirect takes access_denied to the client")
    async def deny(request_id: RequestId) -> Envelope:
        return Envelope.of(await consent().deny(request_id))

    return api
