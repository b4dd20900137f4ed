"""The authorization server's HTTP face: the MCP SDK's handlers (`mcp.server.auth.handlers`) on saip's provider, for
the origin each request came to (`origin`), and what the SDK leaves to the server:

- the metadata: RFC 9728 for /mcp (at its path-based well-known URL, and the root one clients fall back to) and
  RFC 8414, advertising PKCE S256 only, Client ID Metadata Documents and the `iss` of RFC 9207;
- `iss` on the authorization endpoint's error redirects too (the SDK adds none; the code's redirect is the
  consent's, `consent`);
- a token request naming another resource than this /mcp is `invalid_target` (RFC 8707), before the SDK reads it;
- revocation (RFC 7009) for a public client too, whose request carries no secret;
- brute force on /token: each failed request is answered late, and an address that failed
  oauth.token-failure-limit times in a minute is refused (429) until the minute ends, whatever it sends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationErrorResponse
from mcp.server.auth.handlers.token import TokenErrorResponse, TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp

from saip.gateway.metrics import GatewayMetrics
from saip.gateway.oauth.authority import SCOPES, Authority
from saip.gateway.oauth.origin import Origins, resource, same_resource
from saip.gateway.oauth.provider import Provider
from saip.gateway.surface.limits import WindowLimit, seconds_left

PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"
AUTHORIZATION_SERVER = "/.well-known/oauth-authorization-server"
AUTHORIZE, TOKEN, REGISTER, REVOKE = "/authorize", "/token", "/register", "/revoke"
FAILURE_DELAY = 0.2  # seconds a failed token request is answered late
FAILURE_WINDOW = 60.0
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

Handle = Callable[[Request, Provider], Awaitable[Response]]


def resource_metadata_url(origin: str) -> str:
    """Where /mcp's RFC 9728 document is: the well-known prefix before the resource's path (section 3.1)."""
    return f"{origin}{PROTECTED_RESOURCE}/mcp"


def protected_resource(origin: str) -> ProtectedResourceMetadata:
    return ProtectedResourceMetadata.model_validate(
        {
            "resource": resource(origin),
            "authorization_servers": [origin],
            "scopes_supported": list(SCOPES),
            "resource_name": "saip",
            "bearer_methods_supported": ["header"],
        }
    )


def server_metadata(origin: str, dynamic_registration: bool) -> OAuthMetadata:
    """RFC 8414, built from strings so that the issuer reads exactly as the resource metadata and `iss` name it."""
    auth_methods = ["none", "client_secret_post", "client_secret_basic"]
    return OAuthMetadata.model_validate(
        {
            "issuer": origin,
            "authorization_endpoint": origin + AUTHORIZE,
            "token_endpoint": origin + TOKEN,
            "registration_endpoint": origin + REGISTER if dynamic_registration else None,
            "revocation_endpoint": origin + REVOKE,
            "revocation_endpoint_auth_methods_supported": auth_methods,
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": auth_methods,
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


def with_issuer(response: Response, origin: str) -> Response:
    """An error redirect of the authorization endpoint, with `iss` (RFC 9207 asks it of error responses too)."""
    location = response.headers.get("location")
    if response.status_code != 302 or not location:
        return response
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(name == "error" for name, _ in query) or any(name == "iss" for name, _ in query):
        return response
    response.headers["location"] = urlunsplit(parts._replace(query=urlencode([*query, ("iss", origin)])))
    return response


class OAuthRoutes:
    def __init__(
        self,
        authority: Callable[[], Authority],
        origins: Origins,
        metrics: GatewayMetrics,
        *,
        failure_limit: int,
        dynamic_registration: bool,
    ) -> None:
        """`authority` is the running gateway's (its records open once NATS is)."""
        self._authority = authority
        self._origins = origins
        self._metrics = metrics
        self.failures = WindowLimit(failure_limit, FAILURE_WINDOW)
        self._dynamic_registration = dynamic_registration

    def routes(self) -> list[Route]:
        get, post = ["GET", "OPTIONS"], ["POST", "OPTIONS"]
        routes = [
            Route(f"{PROTECTED_RESOURCE}/mcp", cors_middleware(self._at_origin(self._resource), get), methods=get),
            Route(PROTECTED_RESOURCE, cors_middleware(self._at_origin(self._resource), get), methods=get),
            Route(AUTHORIZATION_SERVER, cors_middleware(self._at_origin(self._metadata), get), methods=get),
            # No CORS on the authorization endpoint: a browser is sent there, never a script.
            Route(AUTHORIZE, _limited(request_response(self._at_origin(self._authorize))), methods=["GET", "POST"]),
            Route(TOKEN, cors_middleware(self._at_origin(self._token), post), methods=post),
            Route(REVOKE, cors_middleware(self._at_origin(self._revoke), post), methods=post),
        ]
        if self._dynamic_registration:
            routes.append(Route(REGISTER, cors_middleware(self._at_origin(self._register), post), methods=post))
        return routes

    def _at_origin(self, handle: Handle) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            origin = self._origins.of(request.scope)
            if origin is None:  # the same answer /mcp's own DNS-rebinding protection gives
                return Response("Invalid Host header", status_code=421)
            return await handle(request, Provider(self._authority(), origin))

        return answer

    async def _resource(self, request: Request, provider: Provider) -> Response:
        return await ProtectedResourceMetadataHandler(protected_resource(provider.origin)).handle(request)

    async def _metadata(self, request: Request, provider: Provider) -> Response:
        metadata = server_metadata(provider.origin, self._dynamic_registration)
        return await MetadataHandler(metadata).handle(request)

    async def _authorize(self, request: Request, provider: Provider) -> Response:
        response = await AuthorizationHandler(provider).handle(request)
        self._metrics.oauth_requests.labels("authorize", _outcome(response)).inc()
        return with_issuer(response, provider.origin)

    async def _token(self, request: Request, provider: Provider) -> Response:
        address = request.client.host if request.client is not None else "unknown"
        retry = self.failures.exceeded(address)
        if retry is not None:
            self._metrics.oauth_requests.labels("token", "throttled").inc()
            said = f"Too many failed token requests from this address; try again in {seconds_left(retry)} s."
            headers = {**NO_STORE, "Retry-After": str(seconds_left(retry))}
            return _token_error("invalid_request", said, 429, headers)
        form = await request.form()  # kept on the request: the SDK's handler reads the same form
        asked = form.get("resource")
        if isinstance(asked, str) and not same_resource(asked, provider.resource):
            response = _token_error("invalid_target", f"This server issues tokens for {provider.resource} only.")
        else:
            handler = TokenHandler(provider, ClientAuthenticator(provider))
            response = await handler.handle(request)
        self._metrics.oauth_requests.labels("token", _outcome(response)).inc()
        if response.status_code >= 400:
            self.failures.take(address)
            await anyio.sleep(FAILURE_DELAY)
        return response

    async def _register(self, request: Request, provider: Provider) -> Response:
        options = ClientRegistrationOptions(enabled=True, default_scopes=list(SCOPES))
        response = await RegistrationHandler(provider, options).handle(request)
        self._metrics.oauth_requests.labels("register", _outcome(response)).inc()
        return response

    async def _revoke(self, request: Request, provider: Provider) -> Response:
        response = await _revocation(request, provider)
        self._metrics.oauth_requests.labels("revoke", _outcome(response)).inc()
        return response


async def _revocation(request: Request, provider: Provider) -> Response:
    """RFC 7009: the client authenticated as its registration says (the SDK's ClientAuthenticator: a public client by
    its id alone), then its token revoked, or nothing when it is not its own or not known; 200 either way. The SDK's
    RevocationHandler is not used: it asks every client for a client_secret, a public client's included."""
    try:
        client = await ClientAuthenticator(provider).authenticate_request(request)
    except AuthenticationError as exc:
        body = RevocationErrorResponse(error="unauthorized_client", error_description=exc.message)
        return PydanticJSONResponse(content=body, status_code=401, headers=NO_STORE)
    token = (await request.form()).get("token")
    if not isinstance(token, str) or not token:
        body = RevocationErrorResponse(error="invalid_request", error_description="Send the token to revoke.")
        return PydanticJSONResponse(content=body, status_code=400, headers=NO_STORE)
    found = await provider.load_access_token(token) or await provider.load_refresh_token(client, token)
    if found is not None and found.client_id == client.client_id:
        await provider.revoke_token(found)
    return Response(status_code=200, headers=NO_STORE)


def _limited(app: ASGIApp) -> ASGIApp:
    return RequestBodyLimitMiddleware(app, DEFAULT_MAX_REQUEST_BODY_SIZE)


def _token_error(error: Any, description: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    body = TokenErrorResponse(error=error, error_description=description)
    return PydanticJSONResponse(content=body, status_code=status, headers=headers or NO_STORE)


def _outcome(response: Response) -> str:
    """A bounded label: ok, redirected (the authorization endpoint's answers), refused (4xx) or failed (5xx)."""
    status = response.status_code
    if status < 300:
        return "ok"
    if status < 400:
        return "redirected"
    return "refused" if status < 500 else "failed"
