"""Who a request to /mcp comes from, in the MCP layer's terms: its protocol era, its caller as the gate records it
(the credential the /mcp guard found first, then the client as it names itself), the source it may not see, the
principal its 2026-07-28 approval state is bound to, and what its trace names."""

from __future__ import annotations

import hmac
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from saip.common.tokens import token_hash
from saip.gateway.auth import bearer
from saip.gateway.credentials.identity import Credential, credential_of
from saip.gateway.surface.management import Caller
from saip.gateway.surface.registry import MANAGEMENT

LOOPBACK_HEADER = "x-saip-loopback"
SESSION_HEADER = "mcp-session-id"


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def caller_of(ctx: ServerRequestContext[Any, Any], loopback_secret: str) -> Caller:
    params = ctx.session.client_params
    info = params.client_info if params else None
    capabilities = ctx.session.client_capabilities
    loopback = _header(ctx, LOOPBACK_HEADER)
    return Caller(
        client_name=info.name if info else "",
        client_version=info.version if info else "",
        elicitation=capabilities is not None and capabilities.elicitation is not None,
        loopback=loopback is not None and hmac.compare_digest(loopback, loopback_secret),
        protocol_version=ctx.protocol_version,
        session="" if is_modern(ctx) else _header(ctx, SESSION_HEADER) or "",
        credential=presented(ctx),
    )


def presented(ctx: ServerRequestContext[Any, Any]) -> Credential | None:
    """The credential the /mcp guard found for this request (None in-process or over stdio, where none guards)."""
    return credential_of(getattr(ctx.request, "scope", None))


def hidden(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The source this caller does not see: the management surface, unless its grant includes it."""
    credential = presented(ctx)
    return MANAGEMENT if credential is not None and not credential.manages else None


def _header(ctx: ServerRequestContext[Any, Any], name: str) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    return headers.get(name) if headers is not None else None


def principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """2026-07-28 state is bound to the credential it was asked under (`Credential.principal`): a static token
    itself, so a rotated one cannot answer; an OAuth grant, whose access tokens are renewed under it."""
    credential = presented(ctx)
    if credential is not None and credential.principal:
        return credential.principal
    token = bearer(_header(ctx, "authorization"))
    return token_hash(token) if token else None


def traced(ctx: ServerRequestContext[Any, Any]) -> dict[str, str]:
    """Who a request's trace names: the credential first, then the client as it names itself."""
    credential = presented(ctx)
    params = ctx.session.client_params
    info = params.client_info if params else None
    said = {"saip.client": " ".join(part for part in (info.name, info.version) if part)} if info else {}
    if credential is None or not credential.id:
        return said
    return {"saip.credential": credential.id, "saip.credential.kind": credential.kind.value, **said}
