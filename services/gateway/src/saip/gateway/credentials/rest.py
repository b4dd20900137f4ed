"""The person's side of the clients under /api/v1/clients: every credential /mcp accepts with its use, a named token
made for one client (shown once), a credential revoked, and how each AI client connects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Request
from pydantic import Field

from saip.gateway.credentials.identity import Grant
from saip.gateway.credentials.service import Clients
from saip.gateway.credentials.snippets import snippets
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import Input, ManagementResult

CredentialId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class NamedToken(Input):
    """POST /clients: a named static token for one client that takes a header."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f]+$", description="Who it is for")
    scope: Literal["tools", "manage"] = Field(
        default="tools",
        description="tools: the published tools only; manage: the management surface (saip_* tools) as well",
    )


def router(clients: Callable[[], Clients], mcp_url: Callable[[Request], str]) -> APIRouter:
    """`clients` is the running gateway's; `mcp_url` says where this gateway's /mcp is for a request."""
    api = area_router("/clients", {})

    @api.get("", summary="Every client /mcp accepts: kind, grant, first and last seen, use in the last hour")
    async def listing() -> Envelope:
        return Envelope.of(await clients().listing())

    @api.post("", summary="Make a named token for one client; data.token is shown once")
    async def add(body: NamedToken) -> Envelope:
        return Envelope.of(await clients().add(body.name, Grant(body.scope), created_by="api"))

    @api.get("/snippets", summary="How each AI client connects to /mcp, with this gateway's URL (data.snippets)")
    async def connect(request: Request) -> Envelope:
        url = mcp_url(request)
        found = snippets(url)
        said = f"How {len(found)} clients connect to {url}."
        return Envelope.of(ManagementResult(True, said, data={"url": url, "snippets": found}))

    @api.delete("/{client_id}", summary="Revoke a client's credential: every replica refuses it within a second")
    async def revoke(client_id: CredentialId) -> Envelope:
        return Envelope.of(await clients().revoke(client_id))

    return api
