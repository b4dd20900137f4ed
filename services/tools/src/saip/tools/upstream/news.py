"""Each upstream connection's state change, told on core NATS (`saip.tools.connection.changed`, a
`saip.v1.ConnectionChanged`) for the consoles' live feed.

A connection notes its change here at once and never waits on NATS; one task publishes the latest state of each
server that moved since it last woke, so a burst of changes (a server failing and retrying) is told as its last
state. Nothing is kept: a console that was not listening reads the states with ListServers.
"""

from __future__ import annotations

import contextlib

import anyio
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError

from saip.common import names
from saip.tools.upstream.connections import Live
from saip.v1 import upstream_pb2


class ConnectionNews:
    def __init__(self, nc: NatsClient) -> None:
        self._nc = nc
        self._moved: dict[str, upstream_pb2.ConnectionChanged] = {}
        self._wake = anyio.Event()

    def moved(self, server_id: str, live: Live) -> None:
        """A server's connection changed state (`connections.Moved`)."""
        since = Timestamp()
        since.FromNanoseconds(int(live.since * 1e9))
        self._moved[server_id] = upstream_pb2.ConnectionChanged(
            server_id=server_id, state=live.state, reason=live.reason, since=since
        )
        self._wake.set()

    async def tell_forever(self) -> None:
        """Publish what moved, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            moved, self._moved = self._moved, {}
            for change in moved.values():
                with contextlib.suppress(NatsError, OSError):  # NATS away: the next change, or a read, tells it
                    await self._nc.publish(names.CONNECTION_CHANGED, change.SerializeToString())
