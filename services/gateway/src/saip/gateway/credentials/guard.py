"""The ASGI guard in front of /mcp: while /mcp asks for a credential (the shared token, a named token or OAuth is on),
a request without a valid one gets 401 with `WWW-Authenticate` (RFC 6750; with OAuth on, naming /mcp's resource
metadata, RFC 9728, and the scopes there are); a request with one carries its credential on to the MCP layer, which
serves it what its grant allows. While none is on, a request goes on without one (published tools only)."""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Receive, Scope, Send

from saip.gateway.auth import bearer
from saip.gateway.credentials.identity import ANONYMOUS, GRANT_SCOPES, SCOPE_KEY, Credential, Grant, Kind
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.credentials.usage import Usage
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.oauth.authority import SCOPES
from saip.gateway.oauth.origin import Origins, resource
from saip.gateway.oauth.routes import resource_metadata_url
from saip.gateway.rest import failure

USERS = 10_000  # the SDK's users kept, one a credential
REQUIRED = "A valid MCP bearer token is required: send 'Authorization: Bearer <token>'."
SIGN_IN = (
    "A valid MCP bearer token is required: send 'Authorization: Bearer <token>', or sign in with OAuth (the "
    "resource metadata in WWW-Authenticate names the authorization server)."
)


class McpGuard:
    def __init__(
        self, app: ASGIApp, registry: CredentialRegistry, origins: Origins, usage: Usage, metrics: GatewayMetrics
    ) -> None:
        self.app = app
        self._registry = registry
        self._origins = origins
        self._usage = usage
        self._metrics = metrics
        self._users: dict[tuple[str, Grant], AuthenticatedUser] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._registry.required:
            scope[SCOPE_KEY] = ANONYMOUS
            await self.app(scope, receive, send)
            return
        presented = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                presented = bearer(value.decode("latin-1"))
                break
        # Where the request came to matters to an access token (the resource it must name) and to the challenge
        # only. A Host /mcp does not serve has no resource: only a static token holds, and the MCP app's
        # DNS-rebinding protection answers the request (421).
        credential = await self._registry.verify(presented, lambda: self._resource(scope)) if presented else None
        if credential is None:
            self._metrics.auth_rejected.labels("mcp").inc()
            await self._challenge(scope, receive, send, presented is not None)
            return
        scope[SCOPE_KEY] = credential
        if credential.kind is not Kind.SHARED:
            scope["user"] = self._user(credential)
        self._usage.seen(credential)
        await self.app(scope, receive, send)

    def _user(self, credential: Credential) -> AuthenticatedUser:
        """The MCP SDK binds a 2025-11-25 session to the user that opened it: another credential presenting its id is
        answered as if it did not exist. A named token's or a grant's id is that user; the shared token, the seed's
        one token, has none, so its sessions go on as the seed has them (across a rotation, and once it is removed).
        Each user is made once (at most `USERS`, forgotten all at once past that)."""
        key = (credential.id, credential.grant)
        user = self._users.get(key)
        if user is None:
            if len(self._users) >= USERS:
                self._users.clear()
            scopes = list(GRANT_SCOPES[credential.grant])
            user = self._users[key] = AuthenticatedUser(AccessToken(token="", client_id=credential.id, scopes=scopes))
        return user

    def _resource(self, scope: Scope) -> str | None:
        origin = self._origins.of(scope)
        return resource(origin) if origin is not None else None

    async def _challenge(self, scope: Scope, receive: Receive, send: Send, presented: bool) -> None:
        """401 and the challenge, in the envelope of every refusal of the gateway (`rest.failure`): RFC 6750 names no
        error when no token came, invalid_token when a wrong one did."""
        origin = self._origins.of(scope)
        oauth = self._registry.access is not None
        parts = ['Bearer realm="saip"']
        if presented:
            parts.append('error="invalid_token"')
        if oauth and origin is not None:
            parts.append(f'resource_metadata="{resource_metadata_url(origin)}"')
            parts.append(f'scope="{" ".join(SCOPES)}"')
        refusal = failure(401, SIGN_IN if oauth else REQUIRED, {"WWW-Authenticate": ", ".join(parts)})
        await refusal(scope, receive, send)
