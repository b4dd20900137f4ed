"""The exposed upstream members of a bundle: the shipped server connects to each member's upstream itself.

The connection is the tools service's own (`saip.tools.upstream.connections.Connection`): the official SDK client in
either era, the server's `${ENV}` references resolved from the environment the shipped server runs in, saip's own
/mcp and cloud metadata addresses refused, the listing followed on `list_changed` and every refresh interval, and a
failed connection tried again after a backoff. A member is served only while the upstream's live definition has the
hash the bundle pinned, computed by the ledger's own `fingerprint`; any other definition (the rug pull) is withheld,
with the fields that changed as the reason, until the server is shipped again from a definition the person accepted
in saip. A withheld member leaves the tool list, its reason is in /healthz, and a call of it answers that reason.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.shared.exceptions import MCPError

from saip.shipped.answers import Answer, Relayed
from saip.tools.errors import RuleRefused
from saip.tools.upstream import ledger, registry
from saip.tools.upstream.client import Limits, failure
from saip.tools.upstream.connections import CONNECTED, Connection, Live
from saip.v1 import upstream_pb2

logger = logging.getLogger(__name__)

Changed = Callable[[], Awaitable[None]]


class UpstreamMember:
    """One exposed member: served under its bundle name while its upstream lists the pinned definition."""

    def __init__(self, part: Mapping[str, Any], connection: Connection) -> None:
        self.name = str(part["name"])
        self.tool = str(part["member"])
        self.pinned = str(part["ledgerHash"])
        self._definition = dict(part["definition"])
        self._connection = connection

    @property
    def server_id(self) -> str:
        return self._connection.server.id

    def withheld(self) -> str | None:
        """Why the member is not served now, or None while it is."""
        live = self._connection.live
        if live.state != CONNECTED:
            reason = f" ({live.reason})" if live.reason else ""
            return f"its upstream server '{self.server_id}' is {live.word}{reason}"
        definition = live.tools.get(self.tool)
        if definition is None:
            return f"its upstream server '{self.server_id}' no longer lists '{self.tool}'"
        if ledger.fingerprint(definition) != self.pinned:
            fields = ", ".join(ledger.changed_fields(self._definition, definition)) or "its definition"
            return (
                f"the upstream changed its definition of '{self.tool}' ({fields}) since the ship; it is withheld "
                "until the person accepts the new definition in saip and ships this server again"
            )
        return None

    def listed(self) -> types.Tool:
        # Served only while the live definition is the pinned one, so the pinned one is what the client sees.
        return types.Tool.model_validate({**self._definition, "name": self.name})

    async def call(self, arguments: dict[str, Any]) -> Answer | Relayed:
        # Checked again here: the upstream may have moved while the person was asked to approve this call.
        withheld = self.withheld()
        if withheld is not None:
            return Answer(f"'{self.name}' was not run: {withheld}.", None, is_error=True)
        try:
            return Relayed(await self._connection.call(self.tool, arguments))
        except RuleRefused as exc:
            return Answer(str(exc), None, is_error=True)
        except (MCPError, TimeoutError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            return Answer(
                f"'{self.name}' failed on its upstream server '{self.server_id}': {failure(exc)}. Try again shortly.",
                None,
                is_error=True,
            )


class Upstreams:
    """The connections of a bundle's exposed members, one per upstream server, and who is told when what is served
    changes (`listeners`: the shipped server's list_changed)."""

    def __init__(self, parts: list[Mapping[str, Any]], limits: Limits) -> None:
        self._connections: dict[str, Connection] = {}
        self.members: list[UpstreamMember] = []
        self.listeners: list[Changed] = []
        self._served: frozenset[str] | None = None  # None until `run` settled: nobody listed tools before that
        for part in parts:
            server = registry.validate(registry.from_document(part["server"], upstream_pb2.SERVER_SOURCE_CUSTOM))
            connection = self._connections.get(server.id)
            if connection is None:
                connection = self._connections[server.id] = Connection(server, limits, self._listed)
            self.members.append(UpstreamMember(part, connection))

    async def run(self, group: TaskGroup, within: float) -> None:
        """Start every connection in `group` and wait (at most `within` s) until each connected or failed once, so
        the first tools/list already holds what can be served."""
        for connection in self._connections.values():
            group.start_soon(connection.keep)
        with anyio.move_on_after(within):
            for connection in self._connections.values():
                await connection.settled.wait()
        self._served = self._serving()

    def withheld(self) -> dict[str, str]:
        return {member.name: reason for member in self.members if (reason := member.withheld()) is not None}

    def _serving(self) -> frozenset[str]:
        return frozenset(member.name for member in self.members if member.withheld() is None)

    async def _listed(self, server: upstream_pb2.Server, live: Live) -> None:
        """After each listing of an upstream: tell the listeners when the served members changed."""
        serving = self._serving()
        if self._served is None or serving == self._served:
            return
        self._served = serving
        for name, reason in self.withheld().items():
            logger.warning("upstream member withheld", extra={"tool": name, "reason": reason})
        for listener in self.listeners:
            await listener()
