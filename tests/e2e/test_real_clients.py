"""The MCP Inspector's `mcpdo`, a real client from npm, against the stack `make run` starts, in both eras."""

from __future__ import annotations

import pytest

from tests.e2e.real_clients import Mcpdo
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e
# Reads the management surface and makes refused calls, whatever else the stack holds: it runs on the session's
# shared stack (tests/e2e/conftest.py).
SHARED_STACK = True

ERAS = [pytest.param("legacy", "2025-11-25", id="2025-11-25"), pytest.param("modern", "2026-07-28", id="2026-07-28")]


@pytest.mark.parametrize(("era", "version"), ERAS)
def test_mcpdo_lists_reads_and_calls_the_management_surface(stack: Stack, mcpdo: Mcpdo, era: str, version: str) -> None:
    mcpdo.connect(stack.mcp_url, stack.mcp_token, era)
    shown = mcpdo.text("connections/show")
    assert version in shown and "saip v0.1.0" in shown

    tools = {tool["name"]: tool for tool in mcpdo.json("tools/list")["tools"]}
    overview = tools["saip_monitor_overview"]
    assert overview["annotations"]["readOnlyHint"] is True
    assert overview["inputSchema"]["additionalProperties"] is False

    result = mcpdo.json("tools/call", "saip_monitor_overview")
    assert result.get("isError") in (None, False)
    assert result["structuredContent"]["ok"] is True
    assert result["structuredContent"]["message"].startswith("Management surface on with")

    refused = mcpdo.json("tools/call", "saip_monitor_hitl", "recent:=0")
    assert refused["isError"] is True
    assert refused["structuredContent"]["message"].startswith("Invalid arguments for 'saip_monitor_hitl'")

    status = mcpdo.json("resources/read", "saip://status/management")
    assert '"surface": true' in status["contents"][0]["text"]


def test_mcpdo_with_a_wrong_token_gets_no_connection(stack: Stack, mcpdo: Mcpdo) -> None:
    said = mcpdo.connect(stack.mcp_url, stack.mcp_token + "x", "legacy")
    assert mcpdo.connection == ""
    assert "401" in said or "Unauthorized" in said or "unauthorized" in said.lower(), said
