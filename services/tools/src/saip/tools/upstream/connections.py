"""Connections to the upstream servers with the official `mcp` SDK client: one kept alive per registered server.

A connection speaks either era: `mcp.Client(mode="auto")` probes `server/discover` (2026-07-28) and falls back to
the `initialize` handshake (2025-11-25). Streamable HTTP and SSE go through `httpx2` with the server's headers
resolved from the tools service's environment; a stdio server is a child process of the tools service started by
saip's `stdio` transport in its own session (process group) with a clean environment (the declared variables over
the SDK's short list of inherited ones: PATH, HOME, USER, SHELL, TERM, LOGNAME), and killed with its process group on
close.

Before anything connects, the target is checked: saip's own /mcp is refused by URL (`tools.upstream-gateway-urls`)
and, whatever address points at it, by the handshake (the gateway announces itself as `saip` / `saip gateway`);
cloud metadata and link-local targets are refused (`risk.reach`). A connection lists the tools at once, again on
the server's `list_changed` and every `tools.upstream-refresh-seconds`, and each listing goes to the ledger. A
failure is the state FAILED with its reason, and the connection is tried again after an exponential backoff with
jitter; a refusal (saip's own /mcp, a metadata address, an unset variable) is DISABLED and not retried until the
server is reconnected or changed.

What an upstream sends is bounded while it is read, never after (`tools.upstream-max-response-bytes`): the body of
each streamable-HTTP response to a POST is counted chunk by chunk as it arrives (`BoundedTransport`; one that
declares a length within the limit is read no further than that length by the HTTP parser) and the read stops with
an error past the limit, and so does one event of an SSE stream; the request fails with a sentence naming
the limit, and the connection goes on. The SSE transport's events are bounded by the SDK (1 MiB each). A stdio
server's stdout is read in chunks by the `stdio` transport, one line (one message) held up to the limit: a response
past it fails its request with the same sentence when its id can be read at either end of the line, and any other
line past it ends the connection (FAILED, naming the limit) and fails the calls in flight on it with that sentence.

A call can relay the server's own questions (`elicitation/create`, form mode) to whoever asked for the call (`Ask`).
The SDK names no call a 2025-11-25 question belongs to, so it goes to the call in flight when there is exactly one
on the connection, and is declined when there are several (a question is never put to the wrong person); a
2026-07-28 server's questions come back inside the call's own result, so they always reach that call. Cancelling a
call cancels its request upstream (the SDK sends `notifications/cancelled`, or ends the request's stream).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from saip.common import names
from saip.common.masking import Masker
from saip.tools.errors import OwnMcp, RuleRefused, ToolsError
from saip.tools.upstream import registry, risk
from saip.tools.upstream.ledger import fingerprint
from saip.v1 import upstream_pb2

if TYPE_CHECKING:  # the SDK's client side is imported by the first connection (`connect`), not at the start
    from mcp import Client
    from mcp.client.session import ElicitationFnT, MessageHandlerFnT
    from mcp.shared.dispatcher import ProgressFnT

logger = logging.getLogger(__name__)

VERSION = version("saip-tools")
State = upstream_pb2.ConnectionState
CONNECTING = upstream_pb2.CONNECTION_STATE_CONNECTING
CONNECTED = upstream_pb2.CONNECTION_STATE_CONNECTED
FAILED = upstream_pb2.CONNECTION_STATE_FAILED
DISABLED = upstream_pb2.CONNECTION_STATE_DISABLED
STATE_WORDS: dict[State, str] = {
    CONNECTING: "connecting",
    CONNECTED: "connected",
    FAILED: "failed",
    DISABLED: "disabled",
}
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
# How long, and how many bytes, a POST's answer closed before its end is read on for its connection to be kept.
DRAIN_WITHIN = 0.05
DRAIN_BYTES = 64 * 1024
# Relays one question of the upstream (message, requested JSON Schema) to the call's caller and returns the answer.
Ask = Callable[[str, dict[str, Any]], Awaitable[types.ElicitResult]]
DECLINE = types.ElicitResult(action="decline")


@dataclass(frozen=True)
class Limits:
    connect_timeout: float = 10.0
    call_timeout: float = 60.0
    max_result_bytes: int = 1024 * 1024
    max_response_bytes: int = 16 * 1024 * 1024
    max_tools: int = 1000
    refresh_seconds: float = 30.0
    gateway_urls: tuple[str, ...] = ()
    # What a server's `${NAME}` references may read (tools.upstream-variables); None: the whole environment (tests).
    variables: Mapping[str, str] | None = None


@dataclass
class Live:
    """What one server's connection knows right now."""

    state: State = CONNECTING
    reason: str = ""
    server_name: str = ""
    server_version: str = ""
    protocol: str = ""
    capabilities: tuple[str, ...] = ()
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> definition (ledger.FIELDS)
    hashes: dict[str, str] = field(default_factory=dict)  # name -> its definition's fingerprint
    since: float = field(default_factory=time.time)

    @property
    def word(self) -> str:
        return STATE_WORDS[self.state]

    def listing(self, tools: dict[str, dict[str, Any]]) -> None:
        """What the server lists now, with each definition's fingerprint, taken once a listing (a call compares the
        listed definition with the ledger's by its fingerprint)."""
        self.tools = tools
        self.hashes = {name: fingerprint(definition) for name, definition in tools.items()}


def definition_of(tool: types.Tool) -> dict[str, Any]:
    """The fingerprinted fields of a tool, as the wire names them."""
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    if tool.title and annotations is not None:
        annotations.setdefault("title", tool.title)
    return {
        "name": tool.name,
        "description": tool.description or "",
        "inputSchema": tool.input_schema,
        "annotations": annotations,
    }


def too_large(limit: int) -> str:
    return (
        f"the upstream's response went past {limit} bytes (tools.upstream-max-response-bytes), so saip stopped "
        "reading it"
    )


class ResponseTooLarge(httpx2.StreamError):
    """A JSON response went past `tools.upstream-max-response-bytes` (the SDK fails the request with its text)."""


class EventStreamTooLarge(httpx2.SSEError):
    """An SSE response went past the limit (an SSE failure: the SDK fails the request with its text)."""


class _Counted(httpx2.AsyncByteStream):
    """A response body that fails as soon as more than `limit` bytes of it have arrived.

    Closed before its end (the SDK closes a request's SSE stream as soon as the answer's event is in, a moment before
    the server ends it), it is first read on to its end for up to DRAIN_WITHIN seconds and DRAIN_BYTES bytes: a body
    read whole leaves its connection to the next request, where one closed early made every proxied call open a new
    connection to the upstream. What has not ended by then is closed as it is, its connection with it."""

    def __init__(self, stream: httpx2.AsyncByteStream, limit: int, error: type[Exception]) -> None:
        self._stream = stream
        self._limit = limit
        self._error = error
        self._chunks: AsyncIterator[bytes] | None = None
        self._read = 0
        self._ended = False  # read to its end, or failed: nothing to drain

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._chunks = self._stream.__aiter__()
        async for chunk in self._chunks:
            self._read += len(chunk)
            if self._read > self._limit:
                self._ended = True
                raise self._error(too_large(self._limit))
            yield chunk
        self._ended = True

    async def aclose(self) -> None:
        try:
            if self._chunks is not None and not self._ended:
                with anyio.move_on_after(DRAIN_WITHIN), contextlib.suppress(httpx2.TransportError):
                    drained = 0
                    async for chunk in self._chunks:
                        drained += len(chunk)
                        if drained > DRAIN_BYTES or self._read + drained > self._limit:
                            break
        finally:
            await self._stream.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """The HTTP transport of a streamable-HTTP upstream, counting the body of each answer to a POST (one request's
    JSON, or its SSE stream) as it arrives. The GET stream lives as long as the session, so only its events are
    bounded, one by one (the SDK's `max_sse_event_size`).

    A body whose length the answer declares within the limit is not counted again: the HTTP/1.1 parser (h11) reads
    exactly the declared length and no byte more, unless the answer is also chunked (chunking wins over the length,
    so such a body is counted)."""

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method != "POST" or not isinstance(response.stream, httpx2.AsyncByteStream):
            return response
        if declared_within(response.headers, self._limit):
            return response
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        response.stream = _Counted(response.stream, self._limit, EventStreamTooLarge if sse else ResponseTooLarge)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def declared_within(headers: httpx2.Headers, limit: int) -> bool:
    """Whether an answer's body is framed by a Content-Length of at most `limit` bytes (and not chunked)."""
    if "transfer-encoding" in headers:
        return False
    declared = headers.get("content-length", "")
    return declared.isdigit() and int(declared) <= limit


def same_url(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()


async def check_target(server: upstream_pb2.Server, limits: Limits) -> risk.Reach:
    """Refuse saip's own /mcp by URL, and metadata and link-local targets; say where the server is."""
    http = server.transport != upstream_pb2.TRANSPORT_STDIO
    if http and any(same_url(server.url, url) for url in limits.gateway_urls):
        raise OwnMcp(server.id)
    return await risk.reach(server)


def _import_client_side() -> None:
    for module in ("mcp", "mcp.client.sse", "mcp.client.streamable_http", "saip.tools.upstream.stdio"):
        importlib.import_module(module)


@asynccontextmanager
async def connect(
    server: upstream_pb2.Server,
    limits: Limits,
    *,
    message_handler: MessageHandlerFnT | None = None,
    elicitation_callback: ElicitationFnT | None = None,
) -> AsyncIterator[Client]:
    """One open SDK client to the server (either era), refused when it turns out to be saip's own /mcp."""
    # Here, not at the module's top: the SDK's client side is about 1 s of CPU to import on this machine kind, which a
    # tools service with no upstream server registered (the embedded default's first start) never needs. The first
    # connection imports it on a worker thread, so the service's loop keeps answering meanwhile.
    await anyio.to_thread.run_sync(_import_client_side)
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    from saip.tools.upstream.stdio import stdio_transport

    registry.references_set(
        server, limits.variables
    )  # an unset variable is refused before anything touches the network
    await check_target(server, limits)
    async with AsyncExitStack() as stack:
        match server.transport:
            case upstream_pb2.TRANSPORT_STDIO:
                env = {name: registry.resolve(value, limits.variables) for name, value in server.env.items()}
                transport: Any = stdio_transport(server.command, server.args, env, limits.max_response_bytes)
            case upstream_pb2.TRANSPORT_SSE:
                headers = {name: registry.resolve(value, limits.variables) for name, value in server.headers.items()}
                transport = sse_client(
                    registry.resolve(server.url, limits.variables),
                    headers=headers,
                    timeout=limits.connect_timeout,
                    sse_read_timeout=limits.call_timeout + limits.refresh_seconds,
                )
            case _:
                headers = {name: registry.resolve(value, limits.variables) for name, value in server.headers.items()}
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=headers,
                        timeout=httpx2.Timeout(limits.connect_timeout, read=limits.call_timeout + 5),
                        transport=BoundedTransport(limits.max_response_bytes),
                    )
                )
                transport = streamable_http_client(
                    registry.resolve(server.url, limits.variables),
                    http_client=http,
                    max_sse_event_size=limits.max_response_bytes,
                )
        client = Client(
            transport,
            mode="auto",
            message_handler=message_handler,
            elicitation_callback=elicitation_callback or _decline,
            client_info=types.Implementation(name="saip-tools", version=VERSION),
            read_timeout_seconds=limits.connect_timeout,
            cache=None,
        )
        await stack.enter_async_context(client)
        info = client.server_info
        if info is None or (info.name, info.title) != (names.GATEWAY_MCP_NAME, names.GATEWAY_MCP_TITLE):
            yield client
            return
    # Raised once the session is closed: inside it, the SDK's task group would wrap the refusal in a group.
    raise OwnMcp(server.id)


async def _decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Outside a call (a connection test), an upstream's question is declined: nobody is there to answer it."""
    return DECLINE


@dataclass(eq=False)
class _Call:
    """One call in flight on a connection, and who answers its questions (None: nobody, they are declined)."""

    ask: Ask | None


# The call whose task is running: a 2026-07-28 server's questions are answered inside the call's own task.
_current: ContextVar[_Call | None] = ContextVar("saip_upstream_call", default=None)


async def list_definitions(client: Client, limits: Limits, server_id: str) -> dict[str, dict[str, Any]]:
    """Every tool the server lists (all pages), bounded by `limits.max_tools`."""
    tools: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            tools[tool.name] = definition_of(tool)
        if len(tools) > limits.max_tools:
            raise RuleRefused(
                f"Server '{server_id}' lists more than {limits.max_tools} tools (tools.upstream-max-tools); saip "
                "does not take a tool list that long."
            )
        cursor = page.next_cursor
        if not cursor:
            return tools


def describe(live: Live, client: Client) -> None:
    info = client.server_info
    live.server_name = info.name if info else ""
    live.server_version = info.version if info else ""
    live.protocol = client.protocol_version
    capabilities = client.server_capabilities.model_dump(exclude_none=True)
    live.capabilities = tuple(sorted(capabilities))


Listed = Callable[[upstream_pb2.Server, Live], Awaitable[None]]


class Connection:
    """One server's connection, kept alive for as long as the server is registered (and unchanged)."""

    def __init__(self, server: upstream_pb2.Server, limits: Limits, listed: Listed) -> None:
        self.server = server
        self.live = Live()
        self._limits = limits
        self._listed = listed
        self._client: Client | None = None
        self._calls: list[_Call] = []
        self._changed = anyio.Event()
        self.scope = anyio.CancelScope()
        self.settled = anyio.Event()  # set once the first attempt connected, failed or was refused

    async def keep(self) -> None:
        """Connect, follow, and after a failure connect again after a backoff; a refusal stops here."""
        delay = BACKOFF_FIRST
        with self.scope:
            while True:
                try:
                    await self._session()
                    delay = BACKOFF_FIRST
                except RuleRefused as exc:
                    self._set(DISABLED, str(exc))
                    return
                except Exception as exc:  # any way an upstream can fail: its state says how, and it is retried
                    self._set(FAILED, failure(exc))
                    extra = {"server": self.server.id, "reason": self.live.reason}
                    logger.info("upstream connection failed", extra=extra)
                await anyio.sleep(delay * random.uniform(0.8, 1.2))
                delay = min(delay * 2, BACKOFF_MAX)

    async def _session(self) -> None:
        self._set(CONNECTING, "")
        async with connect(
            self.server, self._limits, message_handler=self._message, elicitation_callback=self._elicit
        ) as client:
            describe(self.live, client)
            self._client = client
            try:
                async with anyio.create_task_group() as group:
                    if client.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
                        group.start_soon(self._listen, client)
                    while True:
                        self._changed = anyio.Event()
                        self.live.listing(await list_definitions(client, self._limits, self.server.id))
                        # Connected once the listing is in the ledger: what it lists can be exposed from then on.
                        await self._listed(self.server, self.live)
                        if self.live.state != CONNECTED:
                            self._set(CONNECTED, "")
                        with anyio.move_on_after(self._limits.refresh_seconds):
                            await self._changed.wait()
            finally:
                self._client = None

    async def _listen(self, client: Client) -> None:
        """2026-07-28 servers announce list changes on subscriptions/listen; one that does not is refreshed."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._changed.set()
        except Exception as exc:  # a server without subscriptions is still listed every refresh interval
            logger.debug("upstream listen unavailable", extra={"server": self.server.id, "error": str(exc)})

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._changed.set()

    async def _elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """The server's question, to the call it belongs to: the one whose task asks, else the only call in flight."""
        call = _current.get() or (self._calls[0] if len(self._calls) == 1 else None)
        if call is None or call.ask is None or not isinstance(params, types.ElicitRequestFormParams):
            extra = {"server": self.server.id, "calls": len(self._calls)}
            logger.info("upstream question declined: no single call whose caller can answer it", extra=extra)
            return DECLINE
        return await call.ask(params.message, dict(params.requested_schema))

    def _set(self, state: State, reason: str) -> None:
        if state != self.live.state:
            self.live.since = time.time()
        if state != CONNECTING:
            self.settled.set()
        self.live.state = state
        self.live.reason = reason

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None, ask: Ask | None = None
    ) -> types.CallToolResult:
        """Call a tool on the open session, bounded by the call timeout (a relayed question waits within it); a
        server that is not connected is a RuleRefused naming it and its state."""
        client = self._client
        if client is None or self.live.state != CONNECTED:
            reason = f" ({self.live.reason})" if self.live.reason else ""
            raise RuleRefused(
                f"Upstream server '{self.server.id}' is {self.live.word}{reason}, so '{tool}' cannot run now; try "
                "again shortly, or ask the person to check the server (saip_mcp_list_servers shows its state)."
            )
        call = _Call(ask)
        self._calls.append(call)
        token = _current.set(call)
        try:
            with anyio.fail_after(self._limits.call_timeout):
                return await client.call_tool(
                    tool, arguments, read_timeout_seconds=self._limits.call_timeout, progress_callback=progress
                )
        finally:
            _current.reset(token)
            self._calls.remove(call)


def failure(exc: BaseException) -> str:
    """A short, masked reason for a failure (exception groups of the SDK's task groups unwrapped); saip's own rules
    are their sentence alone, anything else is named by its type.

    A rule saip enforced is the reason wherever it sits in the group: the SDK's other tasks fail after it (a stream
    closed under them) and may be listed first."""
    leaves = list(_leaves(exc))
    exc = next((leaf for leaf in leaves if isinstance(leaf, ToolsError)), leaves[0])
    text = str(exc) or type(exc).__name__
    named = isinstance(exc, ToolsError) or text == type(exc).__name__
    return Masker().text(text if named else f"{type(exc).__name__}: {text}")[:300]


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


class Connections:
    """The connection of every registered server, kept in step with the registry (`sync` after every change)."""

    def __init__(self, limits: Limits, listed: Listed) -> None:
        self.limits = limits
        self._listed = listed
        self._connections: dict[str, Connection] = {}
        self._group: TaskGroup | None = None
        self._lock = anyio.Lock()

    def start(self, group: TaskGroup) -> None:
        self._group = group

    def live(self, server_id: str) -> Live:
        connection = self._connections.get(server_id)
        # Registered a moment ago (the registry's watch starts its connection): about to connect.
        return connection.live if connection else Live(state=CONNECTING)

    def connection(self, server_id: str) -> Connection | None:
        return self._connections.get(server_id)

    async def sync(self, servers: list[upstream_pb2.Server]) -> None:
        """Start a connection for each new or changed server, stop those of removed or changed ones."""
        async with self._lock:
            wanted = {server.id: server for server in servers}
            for server_id, connection in list(self._connections.items()):
                if wanted.get(server_id) != connection.server:
                    connection.scope.cancel()
                    del self._connections[server_id]
            for server_id, server in wanted.items():
                if server_id not in self._connections:
                    self._start(server)

    async def reconnect(self, server: upstream_pb2.Server) -> Connection:
        async with self._lock:
            old = self._connections.pop(server.id, None)
            if old is not None:
                old.scope.cancel()
            return self._start(server)

    def _start(self, server: upstream_pb2.Server) -> Connection:
        if self._group is None:
            raise ToolsError("The upstream connections are not started; the tools service is still starting.")
        connection = Connection(server, self.limits, self._listed)
        self._connections[server.id] = connection
        self._group.start_soon(connection.keep)
        return connection

    def close(self) -> None:
        for connection in self._connections.values():
            connection.scope.cancel()
        self._connections.clear()
