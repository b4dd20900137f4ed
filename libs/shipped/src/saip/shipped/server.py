"""The shipped server: exactly one bundle's tools on the MCP SDK's low-level Server, in both protocol eras, over
stdio or streamable HTTP with its own bearer token.

Capabilities follow the bundle (the Spring MCP server seed's convention: they come from configuration): tools,
resources and prompts are declared with `listChanged` in both eras (on 2025-11-25 handshakes through the
initialization options, on 2026-07-28 through `subscriptions/listen`). A bundle does not change while it is served;
what is served does when an exposed upstream member is withheld or served again (`upstream`), and then the tool list's
`list_changed` goes to the 2026-07-28 listeners and to every 2025-11-25 session that listed tools. A tool whose part
has `hitl` asks the person first (`approval`). Over stdio there is no web server at all. `stateless` serves
2025-11-25 clients without sessions too, so several replicas can share one Service without affinity.

The server never carries management tools: a bundle cannot hold a `saip_` name (the shipyard refuses it, and this
refuses to start on one), and the gateway's registrar offers none in a home that holds a saip-bundle.json.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from saip.common.masking import mask_quoted
from saip.common.words import is_reserved
from saip.sandbox.job import Limits as SandboxLimits
from saip.sandbox.pool import Sandbox
from saip.shipped.answers import Answer, Relayed
from saip.shipped.approval import Gate, boundary, refused
from saip.shipped.authored import AuthoredTool
from saip.shipped.bundle import AUTHORED, KNOWLEDGE, UPSTREAM, Bundle, BundleInvalid
from saip.shipped.knowledge import KnowledgeTool
from saip.shipped.upstream import Upstreams
from saip.tools.errors import ToolsError
from saip.tools.upstream.client import Limits as UpstreamLimits

logger = logging.getLogger(__name__)

VERSION = "0.1.0"
SANDBOX_TIMEOUT = 30.0
SANDBOX_MEMORY = 128 * 1024 * 1024
UPSTREAM_REFRESH_SECONDS = 30.0  # as tools.upstream-refresh-seconds: how soon a silent rug pull is seen


class ShippedTool(Protocol):
    @property
    def name(self) -> str: ...

    def listed(self) -> types.Tool: ...
    async def call(self, arguments: dict[str, Any]) -> Answer | Relayed: ...


class CannotServe(Exception):
    """The bundle cannot be served here; the message says what to set or do."""


@dataclass(frozen=True)
class Served:
    """The open tools of one bundle, in the bundle's order, and the connections of its upstream members."""

    bundle: Bundle
    tools: dict[str, ShippedTool]
    upstreams: Upstreams = field(default_factory=lambda: Upstreams([], UpstreamLimits()))

    def listed(self) -> list[types.Tool]:
        withheld = self.upstreams.withheld()
        return [tool.listed() for name, tool in self.tools.items() if not is_reserved(name) and name not in withheld]


@asynccontextmanager
async def opened(
    bundle: Bundle, work: Path, environ: Mapping[str, str], *, refresh: float = UPSTREAM_REFRESH_SECONDS
) -> AsyncIterator[Served]:
    """Open every tool of the bundle: the sandbox's worker when there are authored tools, each knowledge snapshot
    unpacked under `work`, a connection to each upstream server of the exposed members (listing again every
    `refresh` s and on its list_changed). Refuses (CannotServe) a reserved name or an unset requirement before
    anything opens."""
    reserved = [part["name"] for part in bundle.tools if is_reserved(part["name"])]
    if reserved:
        raise CannotServe(f"the bundle names {reserved}; 'saip_' is reserved for saip's own management tools")
    missing = sorted(name for name in bundle.document["requirements"] if not environ.get(name, "").strip())
    if missing:
        raise CannotServe(
            f"the bundle needs environment variables that are not set: {', '.join(missing)}; set them where the "
            "server runs, then start it again"
        )
    limits = UpstreamLimits(refresh_seconds=refresh, variables=environ)
    try:
        upstreams = Upstreams([part for part in bundle.tools if part["kind"] == UPSTREAM], limits)
    except ToolsError as exc:
        raise CannotServe(f"an upstream server of the bundle is refused: {exc}") from None
    async with AsyncExitStack() as stack:
        tools: dict[str, ShippedTool] = {}
        sandbox: Sandbox | None = None
        for part in bundle.tools:
            if part["kind"] == AUTHORED:
                if sandbox is None:
                    sandbox = Sandbox(1, SandboxLimits(timeout=SANDBOX_TIMEOUT, memory_bytes=SANDBOX_MEMORY), spares=1)
                    stack.push_async_callback(sandbox.close)
                    await sandbox.warm()
                tools[part["name"]] = AuthoredTool(part, sandbox, environ)
            elif part["kind"] == KNOWLEDGE:
                knowledge = await KnowledgeTool.open(part, bundle.snapshot(part), work)
                stack.push_async_callback(knowledge.close)
                tools[part["name"]] = knowledge
        tools.update((member.name, member) for member in upstreams.members)
        if upstreams.members:
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)  # runs first: the connections end, then their group
            await upstreams.run(group, limits.connect_timeout)
        yield Served(bundle, tools, upstreams)


class ShippedServer(Server[Any]):
    """The low-level server, advertising list_changed on 2025-11-25 handshakes (the SDK's default says false)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class Listening:
    """The 2025-11-25 connections that listed tools, told when the tool list changes (best effort, as the SDK's
    notifications are); each is forgotten when it closes."""

    def __init__(self) -> None:
        self._connections: dict[int, Connection] = {}

    def add(self, ctx: ServerRequestContext[Any, Any]) -> None:
        # Each request gets its own ServerSession over the client's `Connection`, which the SDK offers no public
        # accessor to; the connection's exit stack is the signal that it closed (as the gateway's LegacySessions).
        connection: Connection | None = getattr(ctx.session, "_connection", None)
        key = id(connection)
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or key in self._connections:
            return
        self._connections[key] = connection
        connection.exit_stack.callback(self._connections.pop, key, None)

    async def tools_changed(self) -> None:
        for connection in list(self._connections.values()):
            await connection.send_tool_list_changed()  # best effort: it never raises


def prompt_template(part: Mapping[str, Any]) -> str:
    """An authored tool's own approval prompt (its spec's humanInTheLoop.promptTemplate), else none."""
    hitl = part.get("spec", {}).get("humanInTheLoop") or {}
    return str(hitl.get("promptTemplate") or "")


def build(served: Served, *, gate: Gate | None = None, token: str | None = None) -> ShippedServer:
    """The server of an open bundle; `gate` asks for the tools whose part has `hitl`, `token` keys the sealing of
    2026-07-28 questions (None over stdio: a key of this process)."""
    document = served.bundle.document
    gate = gate or Gate()
    asking = {part["name"]: part for part in served.bundle.tools if part.get("hitl")}
    bus, listening = InMemorySubscriptionBus(), Listening()

    async def tools_changed() -> None:
        await bus.publish(ToolsListChanged())
        await listening.tools_changed()

    served.upstreams.listeners.append(tools_changed)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        listening.add(ctx)
        return types.ListToolsResult(tools=served.listed())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = None if is_reserved(params.name) else served.tools.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=mask_quoted(
                    f"Unknown tool '{params.name}'. Call tools/list for the tools this server serves.", params.name
                ),
            )
        withheld = served.upstreams.withheld().get(params.name)
        if withheld is not None:
            return refused(f"'{params.name}' was not run: {withheld}.")
        part = asking.get(params.name)
        if part is not None:
            stopped = await gate.check(ctx, params, int(part["riskLevel"]), prompt_template(part))
            if stopped is not None:
                asked = isinstance(stopped, types.InputRequiredResult)
                logger.info("approval", extra={"tool": params.name, "outcome": "asked" if asked else "not run"})
                return stopped
        answer = await tool.call(dict(params.arguments or {}))
        logger.info("tool called", extra={"tool": params.name, "error": answer.is_error})
        return answer.result()

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[])

    server = ShippedServer(
        str(document["name"]),
        version=f"{VERSION}+bundle.{document['version']}",
        title=str(document["name"]),
        instructions=str(document["description"]),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_prompts=list_prompts,
        on_subscriptions_listen=ListenHandler(bus),
    )
    server.middleware.append(boundary(token, gate.wait))
    return server


class BearerGuard:
    """Every HTTP request but /healthz needs `Authorization: Bearer <its token>`, compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/healthz":
            presented = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(presented, self._expected):
                refusal = JSONResponse(
                    {"error": "This server needs its bearer token: 'Authorization: Bearer <token>'."},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="saip-shipped", error="invalid_token"'},
                )
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)


def http_app(
    server: ShippedServer, served: Served, token: str, allowed_hosts: list[str], *, stateless: bool
) -> ASGIApp:
    """The streamable HTTP app: /mcp behind the bearer guard, /healthz open (the containers' probe)."""
    if "*" in allowed_hosts:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts,
            allowed_origins=[f"http://{host}" for host in allowed_hosts],
        )
    mcp_app = server.streamable_http_app(transport_security=security, stateless_http=stateless)

    async def healthz(request: Request) -> JSONResponse:
        bundle = served.bundle
        withheld = served.upstreams.withheld()
        return JSONResponse(
            {
                "status": "ok",
                "name": bundle.name,
                "version": bundle.version,
                "tools": len(served.tools) - len(withheld),
                "withheld": [{"name": name, "reason": reason} for name, reason in withheld.items()],
            }
        )

    app = Starlette(routes=[Route("/healthz", healthz), Mount("/", app=mcp_app)])
    return BearerGuard(app, token)


def checked_token(token: str | None) -> str:
    if not token or len(token) < 16:
        raise CannotServe(
            "a shipped server over streamable HTTP needs its bearer token of at least 16 characters in "
            "SAIP_SHIPPED_TOKEN (the shipyard sets it; the person reads it with `saip shipyard token <name>`)"
        )
    return token


__all__ = ["BundleInvalid", "CannotServe", "Served", "ShippedServer", "build", "http_app", "opened"]
