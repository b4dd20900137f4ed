"""What the Safety screen reads, through the REST API and the command line, over a real gateway, the real audit
service and NATS: the management calls filtered by client, tool, level, outcome, operator, interface and a time
range; one call opened with its masked summary, duration and trace; the time the questions took to be answered; and
an export of a filtered range as JSON lines and CSV, the same through `saip audit export`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
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
from tests.waiting import eventually

pytestmark = pytest.mark.integration

AI = types.Implementation(name="claude-code", version="2.1.328")


@asynccontextmanager
async def stack(nats_url: str, home: Path) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient, str]]:
    async with AsyncExitStack() as opened:
        audit = await opened.enter_async_context(running_audit(nats_url))
        gateway, api, url = await serving(opened, home, nats_url, audit_addr=f"127.0.0.1:{audit.port}")
        await eventually(lambda: gateway.registry.tool("saip_monitor_overview") is not None)
        yield gateway, api, url


async def calls(api: httpx.AsyncClient, **query: Any) -> list[dict[str, Any]]:
    answer = (await api.get("/api/v1/audit/management-log", params={"limit": 50, **query})).json()
    assert answer["ok"], answer
    return list(answer["data"]["entries"])


async def saip(url: str, *arguments: str) -> str:
    command = ["--url", url, "--admin-token", ADMIN, *arguments]
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command))
    assert result.exit_code == 0, result.output
    return result.output


async def test_the_management_calls_are_filtered_opened_and_exported(nats_server: LocalNats, tmp_path: Path) -> None:
    async with stack(nats_server.url, tmp_path) as (gateway, api, url):
        async with Client(gateway.mcp, mode="auto", client_info=AI) as client:
            assert envelope(await client.call_tool("saip_monitor_overview", {}))["ok"]
            refused = envelope(await client.call_tool("saip_monitor_management_log", {"limit": 0}))
            assert refused["message"].startswith("Invalid arguments")
        between = datetime.now(UTC)
        assert (await api.post("/api/v1/mcp-token")).json()["ok"]  # the person's change
        await eventually(lambda: _has(api, 3))

        assert [call["tool"] for call in await calls(api, level="WRITE")] == ["POST /api/v1/mcp-token"]
        assert [call["outcome"] for call in await calls(api, outcome="REFUSED")] == ["REFUSED"]
        assert {call["operator"] for call in await calls(api, client="claude-code")} == {"ai"}
        assert [call["client"] for call in await calls(api, operator="person", interface="rest")] == ["person"]
        assert await calls(api, operator="person", interface="cli") == []
        assert [call["tool"] for call in await calls(api, since=between.isoformat())] == ["POST /api/v1/mcp-token"]
        before = {call["tool"] for call in await calls(api, until=between.isoformat())}
        assert before == {"saip_monitor_overview", "saip_monitor_management_log"}

        [overview] = await calls(api, tool="saip_monitor_overview")
        opened = (await api.get(f"/api/v1/audit/management-log/{overview['cursor']}")).json()
        missing = await api.get("/api/v1/audit/management-log/999999")
        hitl = (await api.get("/api/v1/audit/hitl")).json()["data"]

        jsonl = await api.get("/api/v1/audit/export", params={"operator": "ai"})
        as_csv = await api.get("/api/v1/audit/export", params={"format": "csv", "level": "WRITE"})
        by_cli = await saip(url, "audit", "export", "--format", "csv", "--operator", "person")
        shown = await saip(url, "audit", "show", str(overview["cursor"]))
        logged = await saip(url, "audit", "log", "--operator", "person")

    data = opened["data"]
    assert (data["tool"], data["summary"], data["outcome"]) == ("saip_monitor_overview", "saip overview", "OK")
    assert data["durationMs"] >= 0 and len(data["traceId"]) == 32
    assert missing.status_code == 404 and "No audit entry has the cursor 999999" in missing.json()["message"]
    assert hitl["answerTimes"] == {"answered": 0, "p50Seconds": 0.0, "p90Seconds": 0.0, "maxSeconds": 0.0}

    assert jsonl.headers["content-type"].startswith("application/x-ndjson")
    exported = [json.loads(line) for line in jsonl.text.splitlines()]
    assert [call["tool"] for call in exported] == ["saip_monitor_overview", "saip_monitor_management_log"]
    rows = list(csv.DictReader(io.StringIO(as_csv.text)))
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert [(row["tool"], row["operator"], row["interface"]) for row in rows] == [
        ("POST /api/v1/mcp-token", "person", "rest")
    ]
    assert [row["tool"] for row in csv.DictReader(io.StringIO(by_cli))] == ["POST /api/v1/mcp-token"]
    assert "trace:" in shown and data["traceId"] in shown
    assert "POST /api/v1/mcp-token" in logged and "by the person (rest)" in logged


async def _has(api: httpx.AsyncClient, count: int) -> bool:
    return len(await calls(api)) >= count
