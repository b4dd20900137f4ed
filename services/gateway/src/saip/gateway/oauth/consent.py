"""The person's consent to an authorization request: what the console's consent screen shows, and its two answers.

`/authorize` kept the request (`provider.Provider.authorize`) and sent the browser to /console/consent?request=<id>;
the screen reads the request here and answers with one of two grants (the published tools only, or the management
surface too), or denies it. Either answer takes the request (a compare-and-set delete: one answer wins, on any
replica) and gives the URL the browser goes to next: the client's redirect URI with the code, its state and the
issuer (RFC 9207), or with the spec's `access_denied` error.
"""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri

from saip.common.tokens import token_hash
from saip.gateway.credentials.identity import GRANT_SCOPES, Grant, Kind
from saip.gateway.credentials.store import Stored
from saip.gateway.errors import ServiceConflict, ServiceNotFound
from saip.gateway.oauth.authority import CODE_SECONDS, Authority
from saip.gateway.oauth.redirects import is_loopback
from saip.gateway.oauth.tokens import secret
from saip.gateway.surface.management import ManagementResult
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

NOT_WAITING = (
    "No authorization request '{id}' is waiting (answered, expired or never made); the client has to start its "
    "sign-in again."
)
DENIED = "The person declined to connect this client."
GRANTS = {
    Grant.TOOLS: "The published tools only: no saip_* tool, resource or prompt.",
    Grant.MANAGE: "The published tools and the management surface (saip_* tools behind the approval gate).",
}
NOT_ASKED = (
    "This client asked for the published tools only (scope '{scopes}'); approve it with grant 'tools', or have it "
    "ask for the 'manage' scope."
)


def _asks_manage(pending: gateway_pb2.PendingAuthorization) -> bool:
    """A client that names no scope asks for whatever the person gives."""
    return not pending.scopes or Grant.MANAGE.value in pending.scopes


class Consent:
    def __init__(self, authority: Authority) -> None:
        self._authority = authority
        self._requests = authority.records.requests

    async def request(self, request_id: str) -> ManagementResult:
        pending = (await self._waiting(request_id)).value
        host = _host(pending.redirect_uri)
        warnings = []
        if host is not None and is_loopback(host):
            warnings.append(
                "The redirect URI is on this machine (loopback): any program here could have asked in this "
                "client's name. Approve only a sign-in you started yourself just now."
            )
        data: dict[str, Any] = {
            "id": request_id,
            "client": {"id": pending.client_id, "name": pending.client_name, "host": pending.client_host},
            "redirectUri": pending.redirect_uri,
            "redirectHost": host,
            "asks": list(pending.scopes),
            "resource": pending.resource,
            "grants": [
                {"grant": grant.value, "description": words, "available": grant is Grant.TOOLS or _asks_manage(pending)}
                for grant, words in GRANTS.items()
            ],
            "expiresAt": datetime.fromtimestamp(pending.expires_at, UTC).isoformat(),
        }
        message = f"{pending.client_name} ({pending.client_host}) asks to connect to /mcp; approve or deny it."
        return ManagementResult(True, message, warnings=warnings, data=data)

    async def approve(self, request_id: str, grant: Grant) -> ManagementResult:
        stored = await self._waiting(request_id)
        pending = stored.value
        if grant is Grant.MANAGE and not _asks_manage(pending):
            raise ServiceConflict(NOT_ASKED.format(scopes=" ".join(pending.scopes)))
        await self._take(request_id, stored)
        authority = self._authority
        now = authority.clock()
        credential_id = secrets.token_hex(6)
        record = gateway_pb2.CredentialRecord(
            id=credential_id,
            kind=Kind.OAUTH.value,
            name=pending.client_name,
            grant=grant.value,
            client_id=pending.client_id,
            client_host=pending.client_host,
            created_by="consent",
            expires_at=now + authority.refresh_seconds,
        )
        record.created_at.GetCurrentTime()
        await authority.records.grants.create(credential_id, record)
        code = secret()
        await authority.records.codes.create(
            token_hash(code),
            gateway_pb2.AuthorizationCodeRecord(
                client_id=pending.client_id,
                credential_id=credential_id,
                redirect_uri=pending.redirect_uri,
                redirect_uri_explicit=pending.redirect_uri_explicit,
                code_challenge=pending.code_challenge,
                scopes=list(GRANT_SCOPES[grant]),
                resource=pending.resource,
                expires_at=now + CODE_SECONDS,
            ),
        )
        logger.info("oauth client approved", extra={"client": pending.client_id, "grant": grant.value})
        redirect = construct_redirect_uri(
            pending.redirect_uri, code=code, state=pending.state or None, iss=pending.issuer
        )
        message = f"Approved {pending.client_name} with grant '{grant.value}'; the browser goes back to the client."
        return ManagementResult(
            True,
            message,
            persisted=True,
            data={"redirect": redirect, "credential": credential_id, "grant": grant.value},
        )

    async def deny(self, request_id: str) -> ManagementResult:
        stored = await self._waiting(request_id)
        await self._take(request_id, stored)
        pending = stored.value
        logger.info("oauth client denied", extra={"client": pending.client_id})
        redirect = construct_redirect_uri(
            pending.redirect_uri,
            error="access_denied",
            error_description=DENIED,
            state=pending.state or None,
            iss=pending.issuer,
        )
        return ManagementResult(
            True, f"Denied {pending.client_name}; the browser goes back to the client.", data={"redirect": redirect}
        )

    async def _waiting(self, request_id: str) -> Stored[gateway_pb2.PendingAuthorization]:
        stored = await self._requests.get(request_id)
        if stored is None or stored.value.expires_at <= self._authority.clock():
            raise ServiceNotFound(NOT_WAITING.format(id=request_id))
        return stored

    async def _take(self, request_id: str, stored: Stored[gateway_pb2.PendingAuthorization]) -> None:
        """Take the request for this answer: it is answered once, whoever answers first."""
        if not await self._requests.delete(request_id, last=stored.revision):
            raise ServiceNotFound(NOT_WAITING.format(id=request_id))


def _host(uri: str) -> str | None:
    return urlsplit(uri).hostname
