"""One SDK client to an upstream server, opened for as long as a caller needs it: the target checked first
(`target`), the transport of its kind, the handshake's own check, and the listing of its tools.

A client speaks either era: `mcp.Client(mode="auto")` probes `server/discover` (2026-07-28) and falls back to the
`initialize` handshake (2025-11-25). Streamable HTTP and SSE go through `httpx2` with the server's headers resolved from
the tools service's environment, a streamable-HTTP answer read within `tools.upstream-max-response-bytes` (`bounded`);
a stdio server is a child process of the tools service started by saip's `stdio` transport in its own session
(process group) with a clean environment (the declared variables over the SDK's short list of inherited ones: PATH,
HOME, USER, SHELL, TERM, LOGNAME), and killed with its process group on close.

Before anything connects, an unset variable is refused, and so is the target (`target.check`: saip's own /mcp by URL,
cloud metadata and link-local addresses); once connected, a server that announces itself as saip's gateway (`saip` /
`saip gateway`) is refused, whatever address led to it. A listing takes every page, at most `tools.upstream-max-tools`
tools. A failure is said by `failure`: short, masked, saip's own rule first.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import mcp_types as types

from saip.common import names
from saip.common.masking import Masker
from saip.tools.errors import OwnMcp, RuleRefused, ToolsError
from saip.tools.upstream import registry, risk, target
from saip.tools.upstream.bounded import BoundedTransport
from saip.v1 import upstream_pb2

if TYPE_CHECKING:  # the SDK's client side is imported by the first connection (`connect`), not at the start
    from mcp import Client
    from mcp.client.session import ElicitationFnT, MessageHandlerFnT

VERSION = version("saip-tools")
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


async def check_target(server: upstream_pb2.Server, limits: Limits) -> risk.Reach:
    """Refuse saip's own /mcp by URL, and metadata and link-local targets; say where the server is (`target`)."""
    return await target.check(server, limits.gateway_urls, limits.variables)


async def client_side() -> None:
    """The SDK's client side imported, on a worker thread (the first connection's; then it is there already)."""
    await anyio.to_thread.run_sync(_import_client_side)


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
    await client_side()
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
