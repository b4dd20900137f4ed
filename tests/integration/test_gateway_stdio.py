"""The gateway over stdio: the same server, and never the management surface (the registrar's stdio blocker)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from saip.common.natsd import LocalNats

pytestmark = pytest.mark.integration


async def test_stdio_mode_offers_no_management_tools_even_with_a_token(nats_server: LocalNats, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAIP_")}
    env.update(
        {
            "SAIP_HOME": str(tmp_path),
            "SAIP_NATS_URL": nats_server.url,
            "SAIP_MCP_SERVER_TRANSPORT": "stdio",
            "SAIP_MCP_SERVER_AUTH_TOKEN": "t" * 40,
            "SAIP_ADMIN_TOKEN": "a" * 40,
            "SAIP_APPROVAL_SEALING_KEY": "s" * 40,
        }
    )
    server = StdioServerParameters(command=sys.executable, args=["-m", "saip.gateway"], env=env)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "saip"
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
    assert [tool.name for tool in tools if tool.name.startswith("saip_")] == []
    assert resources == []
