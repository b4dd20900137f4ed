"""The connections to the upstream servers: one kept alive per registered server, with the `mcp` SDK's client
(`client.connect`), in step with the registry on every replica (`Connections.sync` after every change).

A connection lists the tools at once, again on the server's `list_changed` (2025-11-25) or its `subscriptions/listen`
(2026-07-28), and every `tools.upstream-refresh-seconds`; each listing goes to the ledger (`Listed`), and the
connection is CONNECTED once it is in. A failure is the state FAILED with its reason (`client.failure`), and the
connection is tried again after an exponential backoff with jitter; a refusal (saip's own /mcp, a metadata address, an
unset variable) is DISABLED and not retried until the server is reconnected or changed.

A call can relay the server's own questions (`elicitation/create`, form mode) to whoever asked for the call (`Ask`).
The SDK names no call a 2025-11-25 question belongs to, so it goes to the call in flight when there is exactly one
on the connection, and is declined when there are several (a question is never put to the wrong person); a
2026-07-28 server's questions come back inside the call's own result, so they always reach that call. Cancelling a
call cancels its request upstream (the SDK sends `notifications/cancelled`, or ends the request's stream).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from saip.tools.errors import RuleRefused, ToolsError
from saip.tools.upstream.client import DECLINE, Ask, Limits, connect, failure, list_definitions
from saip.tools.upstream.ledger import fingerprint
from saip.v1 import upstream_pb2

if TYPE_CHECKING:  # the SDK's client side is imported by the first connection (`client.connect`), not at the start
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT

logger = logging.getLogger(__name__)

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


@dataclass(eq=False)
class _Call:
    """One call in flight on a connection, and who answers its questions (None: nobody, they are declined)."""

    ask: Ask | None


# The call whose task is running: a 2026-07-28 server's questions are answered inside the call's own task.
_current: ContextVar[_Call | None] = ContextVar("saip_upstream_call", default=None)


def describe(live: Live, client: Client) -> None:
    info = client.server_info
    live.server_name = info.name if info else ""
    live.server_version = info.version if info else ""
    live.protocol = client.protocol_version
    capabilities = client.server_capabilities.model_dump(exclude_none=True)
    live.capabilities = tuple(sorted(capabilities))


Listed = Callable[[upstream_pb2.Server, Live], Awaitable[None]]
# Told each state change of a server's connection (its id, what it knows now), at once: it must not wait.
Moved = Callable[[str, Live], None]


class Connection:
    """One server's connection, kept alive for as long as the server is registered (and unchanged)."""

    def __init__(self, server: upstream_pb2.Server, limits: Limits, listed: Listed, moved: Moved | None = None) -> None:
        self.server = server
        self.live = Live()
        self._limits = limits
        self._listed = listed
        self._moved = moved
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
        if self._moved is not None:
            self._moved(self.server.id, self.live)

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


class Connections:
    """The connection of every registered server, kept in step with the registry (`sync` after every change)."""

    def __init__(self, limits: Limits, listed: Listed, moved: Moved | None = None) -> None:
        self.limits = limits
        self._listed = listed
        self._moved = moved
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
        connection = Connection(server, self.limits, self._listed, self._moved)
        self._connections[server.id] = connection
        self._group.start_soon(connection.keep)
        return connection

    def close(self) -> None:
        for connection in self._connections.values():
            connection.scope.cancel()
        self._connections.clear()
