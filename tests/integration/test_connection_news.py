"""The upstream connections' states reach the consoles live: the tools service tells each state change on core NATS
(saip.tools.connection.changed), and every gateway replica tells its consoles that `servers` moved."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from saip.common import names
from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.v1 import upstream_pb2
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import running_tools
from tests.upstreams.running import ECHO, started
from tests.waiting import eventually

pytestmark = pytest.mark.integration

HTTP = upstream_pb2.TRANSPORT_STREAMABLE_HTTP
CONNECTING = upstream_pb2.CONNECTION_STATE_CONNECTING
CONNECTED = upstream_pb2.CONNECTION_STATE_CONNECTED
FAILED = upstream_pb2.CONNECTION_STATE_FAILED


async def test_the_tools_service_tells_each_state_change_of_a_connection(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    told: list[upstream_pb2.ConnectionChanged] = []

    async def heard(message: Msg) -> None:
        told.append(upstream_pb2.ConnectionChanged.FromString(message.data))

    subscription = await nats_client.subscribe(names.CONNECTION_CHANGED, cb=heard)
    async with running_tools(nats_server.url, tools_upstream_refresh_seconds=0.2) as tools:
        with started("http", tmp_path / "tools.json", [ECHO]) as upstream:
            await tools.upstream.servers.add(upstream.server("web", HTTP), "")
            await eventually(lambda: [change.state for change in told][-1:] == [CONNECTED])
        # The upstream is gone: the next listing fails, and that is told too, with its reason.
        gone = await eventually(lambda: next((change for change in told if change.state == FAILED), None))
    await subscription.unsubscribe()
    assert [change.state for change in told[:2]] == [CONNECTING, CONNECTED]
    assert {change.server_id for change in told} == {"web"}
    assert gone.reason and gone.since.seconds > 0


async def test_every_gateway_tells_its_consoles_that_servers_moved_when_a_connection_changes_state(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    gateway = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    changed = upstream_pb2.ConnectionChanged(server_id="web", state=FAILED, reason="ConnectError: refused")
    async with gateway.running():
        with gateway.feed.subscribed() as console, anyio.fail_after(15):
            while True:  # the replica follows the subject once it runs: tell it until it has heard
                await nats_client.publish(names.CONNECTION_CHANGED, changed.SerializeToString())
                event = await console.next(0.2)
                if event is not None and event.topic == "servers":
                    break
    assert event.data == {"server": "web", "state": "failed"}
