"""The person's changes are on the one audit trail, beside the AI's: through a real gateway over HTTP, the real tools
and audit services and NATS, a change made with the REST API or the command line is a ManagementCall record of the
management tool its route reaches, with the person as its operator and the interface it came through, masked,
with its outcome, chained, and read back by saip_monitor_management_log; reads stay unrecorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client

from saip.cli.group import cli
from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from tests.integration.answers import envelope
from tests.integration.audit_support import running_audit
from tests.integration.gateways import ADMIN, serving
from tests.integration.tools_support import running_tools
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

AI = types.Implementation(name="claude-code", version="2.1.328")


@asynccontextmanager
async def stack(nats_url: str, home: Path) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient, str]]:
    async with AsyncExitStack() as opened:
        tools = await opened.enter_async_context(running_tools(nats_url))
        audit = await opened.enter_async_context(running_audit(nats_url))
        gateway, api, url = await serving(
            opened,
            home,
            nats_url,
            tools_addr=f"127.0.0.1:{tools.port}",
            audit_addr=f"127.0.0.1:{audit.port}",
            management_approval="none",
        )
        await eventually(lambda: gateway.registry.tool("saip_monitor_management_log") is not None)
        yield gateway, api, url


async def saip(url: str, *arguments: str) -> str:
    command = ["--url", url, "--admin-token", ADMIN, *arguments]
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command))
    return result.output


async def test_the_persons_changes_are_on_the_trail_with_the_interface_and_reads_are_not(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with stack(nats_server.url, tmp_path) as (gateway, api, url):
        saved = (await api.post("/api/v1/tools", json={"spec": document("adder")})).json()
        assert saved["ok"], saved
        assert (await api.get("/api/v1/tools")).json()["ok"]  # a read
        assert (await api.post("/api/v1/tools/risk", json={"name": "adder"})).json()["ok"]  # a READ tool
        missing = (await api.delete("/api/v1/tools/password=hunter2-never")).json()
        assert not missing["ok"]
        await saip(url, "tools", "delete", "adder")

        async def logged() -> list[dict[str, Any]] | None:
            async with Client(gateway.mcp, mode="auto", client_info=AI) as client:
                found = envelope(await client.call_tool("saip_monitor_management_log", {"limit": 50}))
            entries = [entry for entry in found["data"]["entries"] if entry["operator"] == "person"]
            return entries if len(entries) == 3 else None

        delete_by_cli, delete_missing, save = await eventually(logged)
    assert (save["tool"], save["level"], save["outcome"], save["interface"]) == (
        "saip_tools_save_draft",
        "WRITE",
        "OK",
        "rest",
    )
    assert save["client"] == "person" and save["summary"] == "Save a tool draft"
    assert (delete_missing["tool"], delete_missing["outcome"]) == ("saip_tools_delete", "ERROR")
    assert "hunter2-never" not in delete_missing["arguments"] + delete_missing["result"]
    assert delete_missing["arguments"] == '{"name":"password=***"}'
    assert (delete_by_cli["tool"], delete_by_cli["level"], delete_by_cli["interface"]) == (
        "saip_tools_delete",
        "DESTRUCTIVE",
        "cli",
    )
    assert delete_by_cli["outcome"] == "OK" and delete_by_cli["arguments"] == '{"name":"adder"}'


async def test_a_change_through_a_route_of_the_gateways_own_is_named_by_its_route(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with stack(nats_server.url, tmp_path) as (_, api, _url):
        rotated = (await api.post("/api/v1/mcp-token")).json()
        token = rotated["data"]["token"]

        async def logged() -> dict[str, Any] | None:
            found = (await api.get("/api/v1/audit/management-log")).json()["data"]["entries"]
            return next((entry for entry in found if entry["tool"] == "POST /api/v1/mcp-token"), None)

        entry = await eventually(logged)
    assert (entry["operator"], entry["interface"], entry["level"], entry["outcome"]) == (
        "person",
        "rest",
        "WRITE",
        "OK",
    )
    assert token not in str(entry)
