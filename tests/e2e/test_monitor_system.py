"""The processes of the stack `saip run` starts, as saip_monitor_system and saip_monitor_logs_tail show them: every
service beats (version, uptime, memory) and ships its JSON log lines over NATS, with no log backend; the person
reads the same over REST and `saip audit system` / `saip audit logs`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.stack import Stack, mcp_client
from tests.e2e.test_spine import cli
from tests.e2e.test_tool_studio import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
# Reads the services' beats and log lines, which any stack has: it runs on the session's shared stack
# (tests/e2e/conftest.py).
SHARED_STACK = True

SERVICES = {"gateway", "audit", "tools", "knowledge"}


async def test_every_service_beats_and_its_serving_line_can_be_tailed(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy") as client:

        async def all_beating() -> dict[str, Any] | None:
            data = envelope(await client.call_tool("saip_monitor_system", {}))["data"]
            beating = {entry["service"] for entry in data["services"] if entry["replicas"]}
            return data if beating >= SERVICES else None

        system = await eventually(all_beating, within=30)

        async def served() -> list[dict[str, Any]] | None:
            tail = {"service": "audit", "text": "audit serving"}
            lines = envelope(await client.call_tool("saip_monitor_logs_tail", tail))["data"]["lines"]
            return lines or None

        [serving] = await eventually(served, within=15)

    for entry in system["services"]:
        assert entry["health"] == "ok", entry
        for replica in entry["replicas"]:
            assert replica["version"] == "0.1.0" and replica["uptimeSeconds"] >= 0 and replica["memoryBytes"] > 0
    assert system["vectorStore"]["status"] == "ok"
    assert (serving["service"], serving["level"], serving["msg"]) == ("audit", "INFO", "audit serving")

    shown = cli(stack, "audit", "system")
    assert shown.returncode == 0, shown.stderr
    assert "every service healthy" in shown.stdout
    tailed = cli(stack, "audit", "logs", "--service", "audit", "--text", "audit serving")
    assert tailed.returncode == 0 and "audit serving" in tailed.stdout
    nothing = cli(stack, "audit", "logs", "--service", "audit", "--text", "no line says this")
    assert (nothing.returncode, nothing.stdout) == (0, "0 log lines of audit at INFO or above, oldest first.\n")
    unknown = cli(stack, "audit", "logs", "--service", "audits")
    assert unknown.returncode == 1 and "No log lines of 'audits': no service of that name" in unknown.stderr
