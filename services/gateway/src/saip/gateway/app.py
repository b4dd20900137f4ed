"""The gateway's HTTP app: /mcp to the guarded MCP transport, /console to the console's files, /api/v1 (the person's
API, with the console's sign-in and live feed), with OAuth on the authorization server's endpoints and metadata,
/healthz and /metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from mcp.server.transport_security import TransportSecuritySettings
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from saip.gateway import rest
from saip.gateway.console import routes as console_routes
from saip.gateway.console.static import BUILT, ConsoleFiles, is_console
from saip.gateway.credentials import rest as clients_rest
from saip.gateway.credentials.guard import McpGuard
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.oauth import rest as oauth_rest
from saip.gateway.oauth.routes import OAuthRoutes
from saip.gateway.person import PersonCheck
from saip.gateway.server import VERSION, Gateway
from saip.gateway.surface.limits import WindowLimit

logger = logging.getLogger(__name__)

SESSION_IDLE_SECONDS = 30 * 60
MCP_PATH = "/mcp"
# Console sign-ins that may fail from one address in a minute before the next is refused for the rest of it.
SIGN_IN_FAILURES = 10


def create_app(gateway: Gateway) -> ASGIApp:
    """The HTTP app: /mcp straight to the MCP transport and /console to its files (`Front`), everything else to the
    REST app. The REST app's own lifespan opens the gateway, for an ASGI server that runs lifespans (a test's
    client); `saip.gateway.process` opens the gateway itself and serves the app without it."""
    settings = gateway.settings
    mcp_app = gateway.mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=settings.gateway_allowed_hosts,
            allowed_origins=[f"http://{host}" for host in settings.gateway_allowed_hosts]
            + [f"https://{host}" for host in settings.gateway_allowed_hosts],
        ),
        session_idle_timeout=SESSION_IDLE_SECONDS,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with opened(gateway):
            yield

    app = FastAPI(
        title="saip gateway",
        version=VERSION,
        description=(
            "The person's REST API: the same methods the AI reaches through the saip_* tools. Every answer is the "
            "envelope {ok, message, persisted, restartRequired, warnings, data}; the audit tail streams NDJSON."
        ),
        lifespan=lifespan,
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
    )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        checks = await gateway.health()
        healthy = all(value == "ok" for value in checks.values())
        return JSONResponse({"status": "ok" if healthy else "unavailable", "checks": checks}, 200 if healthy else 503)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    rest.install(app)
    app.state.trail = gateway.trail  # the person's changes, recorded by every /api/v1 route (`rest.Answered`)
    person = PersonCheck(gateway.console_sessions, gateway.metrics)
    # Before the person's API: its last route answers every path it does not know.
    app.include_router(
        console_routes.router(
            sessions=gateway.console_sessions,
            signouts=lambda: gateway.signouts,
            mcp_tokens=gateway.tokens,
            feed=gateway.feed,
            person=person,
            failures=WindowLimit(SIGN_IN_FAILURES, 60.0),
            metrics=gateway.metrics,
        ),
        prefix=rest.PREFIX,
    )
    # The clients /mcp accepts, and (OAuth on) the consent screen's routes: the person's, beside the areas'.
    access = gateway.access
    own = [clients_rest.router(lambda: access.clients, access.mcp_url)]
    if settings.oauth_enabled:
        own.append(oauth_rest.router(lambda: access.consent))
        routes = OAuthRoutes(
            lambda: access.authority,
            access.origins,
            gateway.metrics,
            failure_limit=settings.oauth_token_failure_limit,
            dynamic_registration=settings.oauth_dynamic_registration,
        )
        app.router.routes.extend(routes.routes())
    app.include_router(
        rest.router(
            person=person, operations=gateway.operations, areas=[*(area.router for area in gateway.areas), *own]
        ),
        prefix=rest.PREFIX,
    )
    guarded = McpGuard(mcp_app, access.credentials, access.origins, access.usage, gateway.metrics)
    # Any other path the REST API does not route (`/mcp/`, which the MCP app redirects) still reaches the MCP app.
    app.mount("/", guarded)
    app.add_middleware(RequestMetrics, metrics=gateway.metrics)
    return Front(app, guarded, ConsoleFiles(settings.console_dir or BUILT))


class Front:
    """/mcp to the guarded MCP app at once, /console to the console's files, every other request (and the lifespan)
    to the REST app.

    Through the REST app an MCP request would pass FastAPI's middleware and be matched against every REST route before
    the catch-all mount took it, on every call; none of that applies to /mcp (RequestMetrics leaves it out, the MCP
    app has its own error handling), so it is skipped. The console's files are static, and need no route either.
    """

    def __init__(self, rest: ASGIApp, mcp: ASGIApp, console: ASGIApp) -> None:
        self.rest = rest
        self._mcp = mcp
        self._console = console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            await self._mcp(scope, receive, send)
        elif scope["type"] == "http" and is_console(scope["path"]):
            await self._console(scope, receive, send)
        else:
            await self.rest(scope, receive, send)


@asynccontextmanager
async def opened(gateway: Gateway) -> AsyncIterator[Gateway]:
    """The gateway running, with the MCP session manager the HTTP transport needs."""
    async with gateway.running(), gateway.mcp.session_manager.run():
        logger.info(
            "gateway serving",
            extra={"port": gateway.settings.gateway_port, "replica": gateway.settings.gateway_replica},
        )
        yield gateway


class RequestMetrics:
    """Counts and times REST API and health requests by route template (MCP requests have their own metrics)."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/mcp"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            # Routing records the matched route in the scope; its template is a bounded label. A REST route's own
            # template is the one in the router under the API's prefix (`rest.router`), so the prefix is put back.
            route = getattr(scope.get("route"), "path", "") or "unmatched"
            if scope["path"].startswith(f"{rest.PREFIX}/") and route != "unmatched":
                route = rest.PREFIX + route
            self._metrics.http_requests.labels(route, scope["method"], str(status)).inc()
            self._metrics.http_request_seconds.labels(route, scope["method"]).observe(time.perf_counter() - started)
