"""The gateway process follows the service shape: SIGTERM drains and stops it with exit 0, and a start failure is
one line naming what to change, with exit 1."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from saip.common.natsd import LocalNats
from tests.integration.gateways import ready, start_replica
from tests.waiting import eventually

pytestmark = pytest.mark.integration


async def test_sigterm_stops_the_gateway_cleanly(nats_server: LocalNats, tmp_path: Path) -> None:
    gateway = start_replica(tmp_path, nats_server.url, "one", module="saip.gateway", SAIP_LOG_LEVEL="INFO")
    try:
        await ready(gateway)
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.wait(timeout=20) == 0
    finally:
        gateway.stop()
    log = gateway.log.read_text()
    assert "gateway ready" in log and "gateway stopped" in log


async def test_a_taken_port_is_one_line_and_exit_1(nats_server: LocalNats, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        gateway = start_replica(tmp_path, nats_server.url, "one", module="saip.gateway", SAIP_GATEWAY_PORT=str(port))
        try:
            await eventually(lambda: gateway.process.poll() is not None, within=30)
        finally:
            gateway.stop()
    assert gateway.process.returncode == 1
    [line] = [line for line in gateway.log.read_text().splitlines() if "gateway cannot start" in line]
    assert f"cannot listen on 127.0.0.1:{port}" in line and "SAIP_GATEWAY_PORT" in line
    assert "Traceback" not in gateway.log.read_text()
