"""The MCP SDK's authorization server provider (`mcp.server.auth.provider.OAuthAuthorizationServerProvider`) over
saip's records, for requests that reached the gateway at one origin (the issuer, and /mcp's resource under it).

The SDK's handlers parse and check each request (client, redirect URI, PKCE S256, code expiry and verifier, client
authentication) and call these methods. Here: a registration's redirect URIs (`redirects`); `authorize` keeps the
request for the person's consent and sends the browser to the console; a code is spent once, a refresh token is
rotated once; a code or a refresh token presented again revokes the grant it belongs to; revoking a token revokes
its grant (RFC 7009 asks that the access and refresh tokens of one grant go together).
"""

from __future__ import annotations

import logging
import secrets
from typing import TypeVar
from urllib.parse import urlencode

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from saip.common.tokens import token_hash
from saip.gateway.credentials.identity import Kind
from saip.gateway.credentials.store import Records
from saip.gateway.oauth import redirects
from saip.gateway.oauth.authority import Authority
from saip.gateway.oauth.origin import resource, same_resource
from saip.gateway.oauth.tokens import secret
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

CONSENT_PATH = "/console/consent"
REUSED_CODE = "the authorization code was already used; the grant it gave is revoked, so authorize again"
REUSED_REFRESH = "the refresh token was already used; the grant it belongs to is revoked, so authorize again"
REVOKED = "the grant was revoked; authorize again"


# A code or a refresh token as saip keeps it: spent once.
Spendable = TypeVar("Spendable", gateway_pb2.AuthorizationCodeRecord, gateway_pb2.RefreshRecord)


class SpentCode(AuthorizationCode):
    """A code as saip keeps it: the grant it gives."""

    credential_id: str


class HeldRefreshToken(RefreshToken):
    """A refresh token as saip keeps it: the grant it belongs to."""

    credential_id: str


class Provider(OAuthAuthorizationServerProvider[SpentCode, HeldRefreshToken, AccessToken]):
    def __init__(self, authority: Authority, origin: str) -> None:
        self._authority = authority
        self.origin = origin
        self._records = authority.records

    @property
    def resource(self) -> str:
        return resource(self.origin)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        known = await self._authority.client(client_id)
        return known.info if known is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        problem = redirects.problems([str(uri) for uri in client_info.redirect_uris or []])
        if problem is not None:
            raise RegistrationError("invalid_redirect_uri", f"{problem}.")
        if not client_info.redirect_uris:
            raise RegistrationError("invalid_redirect_uri", "register at least one redirect URI.")
        record = gateway_pb2.OAuthRegistration(
            client_id=client_info.client_id, metadata_json=client_info.model_dump_json(exclude_none=True)
        )
        record.registered_at.GetCurrentTime()
        await self._records.registrations.put(client_info.client_id, record)
        logger.info("oauth client registered", extra={"client": client_info.client_id})

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and not same_resource(params.resource, self.resource):
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource} only.")
        known = await self._authority.client(client.client_id)
        request_id = secrets.token_urlsafe(24)
        pending = gateway_pb2.PendingAuthorization(
            client_id=client.client_id,
            client_name=known.name if known is not None else client.client_id,
            client_host=known.host if known is not None else "",
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state or "",
            scopes=params.scopes or [],
            resource=self.resource,
            issuer=self.origin,
            expires_at=self._authority.clock() + self._authority.consent_seconds,
        )
        await self._records.requests.create(request_id, pending)
        return f"{self.origin}{CONSENT_PATH}?{urlencode({'request': request_id})}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> SpentCode | None:
        stored = await self._records.codes.get(token_hash(authorization_code))
        if stored is None:
            return None
        code = stored.value  # a used one too: exchanging it again revokes its grant
        return SpentCode(
            code=authorization_code,
            scopes=list(code.scopes),
            expires_at=code.expires_at,
            client_id=code.client_id,
            code_challenge=code.code_challenge,
            redirect_uri=AnyUrl(code.redirect_uri),
            redirect_uri_provided_explicitly=code.redirect_uri_explicit,
            resource=code.resource,
            subject=code.credential_id,
            credential_id=code.credential_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: SpentCode
    ) -> OAuthToken:
        credential_id = authorization_code.credential_id
        code = await self._spend(self._records.codes, authorization_code.code, credential_id, REUSED_CODE)
        return await self._issue(client.client_id, credential_id, authorization_code.scopes, code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> HeldRefreshToken | None:
        stored = await self._records.refresh.get(token_hash(refresh_token))
        if stored is None:
            return None
        held = stored.value
        return HeldRefreshToken(
            token=refresh_token,
            client_id=held.client_id,
            scopes=list(held.scopes),
            expires_at=int(held.expires_at),
            resource=held.resource,
            subject=held.credential_id,
            credential_id=held.credential_id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: HeldRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        credential_id = refresh_token.credential_id
        held = await self._spend(self._records.refresh, refresh_token.token, credential_id, REUSED_REFRESH)
        return await self._issue(client.client_id, credential_id, scopes, held.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        claims = self._authority.access.read(token, None)
        if claims is None:
            return None
        return AccessToken(
            token=token,
            client_id=claims.client_id,
            scopes=list(claims.scopes),
            expires_at=claims.expires_at,
            resource=claims.resource,
            subject=claims.credential_id,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        if token.subject:
            await self._revoke(token.subject, "revoked by its client")

    async def _issue(self, client_id: str, credential_id: str, scopes: list[str], resource: str) -> OAuthToken:
        """A new access token and refresh token of a grant that still stands; the grant lives on with the refresh
        token (its record rewritten, so it ages out with the last one)."""
        authority = self._authority
        grant = await authority.records.grants.get(credential_id)
        if grant is None or grant.value.kind != Kind.OAUTH or grant.value.client_id != client_id:
            raise TokenError("invalid_grant", REVOKED)
        expires_at = authority.clock() + authority.refresh_seconds
        grant.value.expires_at = expires_at
        if not await authority.records.grants.update(credential_id, grant.value, grant.revision):
            raise TokenError("invalid_grant", REVOKED)  # revoked meanwhile (or renewed by a second refresh at once)
        refresh = secret()
        held = gateway_pb2.RefreshRecord(
            client_id=client_id, credential_id=credential_id, scopes=scopes, resource=resource, expires_at=expires_at
        )
        await authority.records.refresh.create(token_hash(refresh), held)
        access = authority.access.issue(
            issuer=self.origin, resource=resource, credential_id=credential_id, client_id=client_id, scopes=scopes
        )
        return OAuthToken(
            access_token=access,
            expires_in=authority.access.lifetime,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def _spend(self, records: Records[Spendable], secret: str, credential_id: str, reused: str) -> Spendable:
        """Spend a code or a refresh token, once on whichever replica (a compare-and-set to `used`); one spent
        already (or by a second request at the same moment) revokes the grant it belongs to: someone holds a copy."""
        key = token_hash(secret)
        stored = await records.get(key)
        if stored is not None and not stored.value.used:
            stored.value.used = True
            if await records.update(key, stored.value, stored.revision):
                return stored.value
        await self._revoke(credential_id, reused)
        raise TokenError("invalid_grant", reused)

    async def _revoke(self, credential_id: str, why: str) -> None:
        if credential_id and await self._records.grants.delete(credential_id):
            logger.warning("oauth grant revoked", extra={"credential": credential_id, "reason": why})
