"""The MCP face of the gateway: the SDK's low-level Server reading the registry, in both protocol eras, with the
Skills extension (`surface.skills`).

2025-11-25 sessions are tracked so `list_changed` reaches each of them on its standalone stream; 2026-07-28 clients
get it on `subscriptions/listen`. The SDK seals the 2026-07-28 request state with the shared sealing key.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from opentelemetry.trace import SpanKind

from saip.common import names, tracing
from saip.common.approval_form import INPUT_KEY
from saip.common.masking import mask_quoted
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface import results, skills
from saip.gateway.surface.approval import Answer, ElicitationFailed
from saip.gateway.surface.gate import GateResult
from saip.gateway.surface.registry import Changes, Registry
from saip.gateway.surface.requests import caller_of, hidden, is_modern, principal, traced

logger = logging.getLogger(__name__)
_SPANS = tracing.tracer("gateway")

INSTRUCTIONS = (
    "saip is an operations plane for AI agents. Next to the published tools, this server offers management tools "
    "named saip_<area>_<verb> to clients whose credential has the management grant. Read-only tools run at once; "
    "steps that change something may ask the person at your client to approve them first (MCP elicitation), and "
    "every call is audited. When a tool answers that it was not run, follow the instruction in its message instead "
    "of retrying."
)


class McpInteraction:
    """One call's channel to the person: push elicitation + progress (2025-11-25) or the retry's answer (2026-07-28)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self._params = params

    @property
    def roundtrip(self) -> bool:
        return is_modern(self._ctx)

    @property
    def answer(self) -> Answer | None:
        response = (self._params.input_responses or {}).get(INPUT_KEY)
        if not isinstance(response, types.ElicitResult):
            return None
        return Answer(response.action, dict(response.content) if response.content is not None else None)

    @property
    def state(self) -> str | None:
        return self._params.request_state

    @property
    def reports_progress(self) -> bool:
        # Over HTTP a client follows progress only by sending a token; an in-process client (no HTTP request) may
        # take progress through its callback without one, so it keeps the streamed call.
        sent_token = self._params.meta is not None and "progress_token" in self._params.meta
        return sent_token or self._ctx.request is None

    async def elicit(self, message: str, schema: dict[str, Any]) -> Answer:
        try:
            result = await self._ctx.session.elicit_form(message, schema, related_request_id=self._ctx.request_id)
        except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise ElicitationFailed(str(exc) or type(exc).__name__) from exc
        return Answer(result.action, dict(result.content) if result.content is not None else None)

    async def progress(self, done: float, total: float, message: str) -> None:
        await self._ctx.session.report_progress(done, total, message)


class Listener(Protocol):
    """What the fan-out needs of a 2025-11-25 connection: its standalone stream's three notifications, and its
    teardown (the SDK's `Connection`; the tests' fakes)."""

    exit_stack: AsyncExitStack

    async def send_tool_list_changed(self) -> None: ...

    async def send_resource_list_changed(self) -> None: ...

    async def send_prompt_list_changed(self) -> None: ...


Send = Callable[[Listener], Awaitable[None]]


def _sends(changes: Changes) -> list[Send]:
    """One send for each list that changed, tools first."""
    sends: list[Send] = []
    if changes.tools:
        sends.append(lambda listener: listener.send_tool_list_changed())
    if changes.resources:
        sends.append(lambda listener: listener.send_resource_list_changed())
    if changes.prompts:
        sends.append(lambda listener: listener.send_prompt_list_changed())
    return sends


class LegacySessions:
    """Live 2025-11-25 connections (HTTP sessions, stdio, in-process), each kept once and forgotten when it closes.

    The connection is kept, not the first request's `ServerSession`, which would keep that request's dispatch
    context alive for the session's whole life. `notify` tells them all with at most `concurrency` sends under way:
    a send that does not finish in `send_seconds` (a client that stopped reading its stream) is given up and its
    connection forgotten until its next request tracks it again, so one stuck client never holds the others.
    """

    def __init__(self, metrics: GatewayMetrics, *, concurrency: int = 64, send_seconds: float = 5.0) -> None:
        self._listeners: dict[Listener, None] = {}  # insertion-ordered: the oldest sessions are told first
        self._metrics = metrics
        self._concurrency = concurrency
        self._send_seconds = send_seconds

    def __len__(self) -> int:
        return len(self._listeners)

    def __contains__(self, listener: object) -> bool:
        return listener in self._listeners

    def track(self, ctx: ServerRequestContext[Any, Any]) -> None:
        # The SDK keeps a connection's state and teardown on the `Connection` behind the session and offers no public
        # accessor; its exit stack is the one reliable signal that a session ended (DELETE, idle timeout, crash).
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and not is_modern(ctx):
            self.add(connection)

    def add(self, listener: Listener) -> None:
        """Keep `listener` until its connection closes (a second add of the same one changes nothing)."""
        if listener in self._listeners:
            return
        self._listeners[listener] = None
        listener.exit_stack.callback(self.forget, listener)
        self._metrics.mcp_sessions.set(len(self._listeners))

    def forget(self, listener: Listener) -> None:
        if listener in self._listeners:
            del self._listeners[listener]
            self._metrics.mcp_sessions.set(len(self._listeners))

    async def notify(self, changes: Changes) -> None:
        """Tell every session open now, `concurrency` sends at a time; returns when each was told or given up.

        The sends go list by list: every session's tools/list_changed before any resources/list_changed, so the
        list clients act on most reaches them all in the time of one notification each, not of all three."""
        listeners = list(self._listeners)
        sends = _sends(changes)
        waiting = ((listener, send) for send in sends for listener in listeners)
        async with anyio.create_task_group() as group:
            for _ in range(min(self._concurrency, len(listeners) * len(sends))):
                group.start_soon(self._tell_each, waiting)

    async def _tell_each(self, waiting: Iterator[tuple[Listener, Send]]) -> None:
        # The workers share one iterator: each takes the next send as soon as its last one is done, so a slow
        # session holds one worker, never the round.
        for listener, send in waiting:
            if listener not in self._listeners:
                continue  # it closed (or was given up) since the round began: nobody is there to tell
            with anyio.move_on_after(self._send_seconds) as scope:
                await send(listener)
            if scope.cancelled_caught:
                logger.info(
                    "a session did not take list_changed in time; forgetting it until its next request",
                    extra={"seconds": self._send_seconds},
                )
                self.forget(listener)


class ListChangedNotifier:
    """Tells every client in both eras that a list changed, off the path of the change that caused it.

    `changed` publishes on the 2026-07-28 bus at once (the SDK's listen streams buffer each event and never block the
    publisher; that era holds no session to tell) and marks the change for the 2025-11-25 sessions, which
    `deliver_forever` tells in a task of its own. Changes that come while a round is under way are merged into one
    next round, sent to every session open when it starts: the last change always reaches every session.
    """

    def __init__(self, bus: InMemorySubscriptionBus, sessions: LegacySessions) -> None:
        self._bus = bus
        self._sessions = sessions
        self._pending = Changes()
        self._wake = anyio.Event()

    async def changed(self, changes: Changes) -> None:
        if changes.tools:
            await self._bus.publish(ToolsListChanged())
        if changes.resources:
            await self._bus.publish(ResourcesListChanged())
        if changes.prompts:
            await self._bus.publish(PromptsListChanged())
        self._pending = self._pending.merged(changes)
        self._wake.set()

    async def deliver_forever(self) -> None:
        """Tell the 2025-11-25 sessions of each change, one round at a time, until cancelled (the gateway's end)."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            changes, self._pending = self._pending, Changes()
            await self._sessions.notify(changes)


class GatewayServer(Server[Any]):
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


def unknown(kind: str, name: str, then: str) -> MCPError:
    """A name /mcp does not serve, said masked where it quotes what the client sent (it may hold a secret)."""
    return MCPError(code=types.INVALID_PARAMS, message=mask_quoted(f"Unknown {kind} '{name}'. {then}", name))


def build_server(
    *,
    registry: Registry,
    sessions: LegacySessions,
    bus: InMemorySubscriptionBus,
    sealing_key: str,
    state_ttl: float,
    loopback_secret: str,
    version: str,
    metrics: GatewayMetrics,
    max_result_bytes: int = results.DEFAULT_LIMIT,
) -> GatewayServer:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=registry.tools(hidden(ctx)))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        served = registry.tool(params.name)
        if served is None:
            raise unknown("tool", params.name, "Call tools/list for the tools now served.")
        result = await served.call(params.arguments, caller_of(ctx, loopback_secret), McpInteraction(ctx, params))
        return to_mcp(result, max_result_bytes)

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=registry.resources(hidden(ctx)))

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=registry.resource_templates(hidden(ctx)))

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        found = await registry.read(params.uri, hidden(ctx))
        if found is None:
            raise unknown("resource", params.uri, "Call resources/list and resources/templates/list.")
        text, mime_type = found
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=text, mime_type=mime_type)]
        )

    async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=registry.prompts(hidden(ctx)))

    async def get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = registry.prompt(params.name, hidden(ctx))
        if prompt is None:
            raise unknown("prompt", params.name, "Call prompts/list.")
        return await prompt.render(dict(params.arguments or {}))

    server = GatewayServer(
        names.GATEWAY_MCP_NAME,
        version=version,
        title=names.GATEWAY_MCP_TITLE,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=registry.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(bus),
    )
    skills.install(server, registry, hidden)

    async def observe(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        sessions.track(ctx)
        if ctx.request_id is None:  # a notification: nothing answers it, nothing to time or trace
            return await call_next(ctx)
        started = time.perf_counter()
        method = ctx.method if ctx.method in _KNOWN_METHODS else "other"
        era = "2026-07-28" if is_modern(ctx) else "2025-11-25"
        try:
            # The root of the request's trace: the gate, the gRPC call and the audit publish are its children.
            attributes = {"mcp.method": method, "mcp.era": era, **traced(ctx)}
            with _SPANS.span(f"mcp {method}", kind=SpanKind.SERVER, attributes=attributes):
                return await call_next(ctx)
        finally:
            metrics.mcp_requests.labels(method, era).inc()
            metrics.mcp_request_seconds.labels(method).observe(time.perf_counter() - started)

    security = RequestStateSecurity(keys=[sealing_key], ttl=state_ttl, bind_principal=principal)
    server.middleware.extend([observe, RequestStateBoundary(security, default_audience="saip")])
    return server


_KNOWN_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "subscriptions/listen",
        "skills/list",
        "skills/get",
    }
)


def to_mcp(result: GateResult, limit: int) -> types.CallToolResult | types.InputRequiredResult:
    """The MCP answer of a gate's result: its question, or the result bounded to `limit` bytes (`results`)."""
    if result.question is not None:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=result.question.message, requested_schema=result.question.schema
            )
        )
        return types.InputRequiredResult(input_requests={INPUT_KEY: request}, request_state=result.question.state)
    if result.text is not None:
        return results.text_result(result.text, result.structured, result.is_error, limit)
    return results.envelope_result(dict(result.envelope or {}), result.is_error, limit)
