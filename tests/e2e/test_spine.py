"""The spine end to end, started as `make run` starts it, driven by the official MCP client over HTTP in both eras."""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import threading
import time
from typing import IO, Any

import anyio
import httpx
import mcp_types as types
import pytest

from tests.e2e.stack import SAIP, Stack, mcp_client
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
# Its listings are of the monitor tools (compared with `>=`) and of its own calls, newest first; it writes each
# MCP token it rotates into the banner, so the modules after it read the current one: it runs on the session's
# shared stack (tests/e2e/conftest.py).
SHARED_STACK = True

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
MONITOR_TOOLS = {
    "saip_monitor_overview",
    "saip_monitor_management_log",
    "saip_monitor_risk_events",
    "saip_monitor_hitl",
    "saip_monitor_tool_calls",
    "saip_monitor_traces",
    "saip_monitor_trace_get",
}


def cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SAIP_GATEWAY_URL": stack.url, "SAIP_ADMIN_TOKEN": stack.admin_token}
    return subprocess.run([str(SAIP), *args], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_the_banner_gives_the_mcp_url_and_both_tokens(stack: Stack) -> None:
    assert stack.mcp_url == f"{stack.url}/mcp"
    token_file = stack.home / "mcp-token"
    assert token_file.read_text().strip() == stack.mcp_token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert (stack.home / "admin-token").read_text().strip() == stack.admin_token
    assert stack.mcp_token != stack.admin_token


def test_healthz_is_200_when_every_service_is_healthy(stack: Stack) -> None:
    reply = httpx.get(f"{stack.url}/healthz", timeout=5)
    assert reply.status_code == 200
    assert reply.json() == {
        "status": "ok",
        "checks": {"nats": "ok", "audit": "ok", "tools": "ok", "knowledge": "ok", "shipyard": "ok"},
    }


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param({"Authorization": "Bearer wrong"}, id="wrong"),
        pytest.param({"Authorization": "Basic dXNlcjpwYXNz"}, id="other-scheme"),
    ],
)
def test_mcp_refuses_a_missing_or_wrong_token_with_401(stack: Stack, headers: dict[str, str]) -> None:
    reply = httpx.post(stack.mcp_url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=5)
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_the_tokens_do_not_open_each_other_s_door(stack: Stack) -> None:
    admin_on_mcp = httpx.post(
        stack.mcp_url,
        headers={"Authorization": f"Bearer {stack.admin_token}"},
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        timeout=5,
    )
    mcp_on_api = httpx.get(
        f"{stack.url}/api/v1/status", headers={"Authorization": f"Bearer {stack.mcp_token}"}, timeout=5
    )
    assert (admin_on_mcp.status_code, mcp_on_api.status_code) == (401, 401)
    assert mcp_on_api.headers["www-authenticate"].startswith("Bearer")


async def test_the_person_reads_the_trace_of_a_monitor_call_with_saip_traces(stack: Stack) -> None:
    """Every process the launcher started exports its spans: a call's trace crosses the gateway and the audit
    service, and `saip traces` lists it and prints its tree."""

    def listed() -> set[str]:
        done = cli(stack, "traces", "list", "--tool", "saip_monitor_hitl", "--json")
        assert done.returncode == 0, done.stderr
        traces = json.loads(done.stdout)["data"]["traces"]
        return {trace["traceId"] for trace in traces if {"gateway", "audit"} <= set(trace["services"])}

    # The stack is shared: other modules' calls of the tool are listed too (a refused one, which asks the audit
    # service nothing, has only the chain's span there), and a trace is read as its spans arrive.
    before = listed()
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy") as client:
        assert not (await client.call_tool("saip_monitor_hitl", {"recent": 1})).is_error

    def shown() -> tuple[str, str] | None:
        for trace_id in listed() - before:
            done = cli(stack, "traces", "get", trace_id)
            assert done.returncode == 0, done.stderr
            if "grpc GetHitlSummary" in done.stdout and "audit chain" in done.stdout:
                return trace_id, done.stdout
        return None

    trace_id, tree = await eventually(shown, within=20.0)
    assert tree.startswith(f"Trace {trace_id}: mcp tools/call, ")


@pytest.mark.parametrize("mode", ERAS)
async def test_each_era_sees_and_calls_the_monitor_tools(stack: Stack, mode: str) -> None:
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools.keys() >= MONITOR_TOOLS
        assert all(tools[name].annotations.read_only_hint for name in MONITOR_TOOLS)  # type: ignore[union-attr]
        overview = await client.call_tool("saip_monitor_overview", {})
        resources = await client.list_resources()
        status = await client.read_resource("saip://status/management")
    data = envelope(overview)
    assert data["ok"] is True and not overview.is_error
    assert data["data"]["management"]["surface"] is True
    assert set(data["data"]["management"]["tools"]) >= MONITOR_TOOLS
    assert "saip://status/management" in {str(r.uri) for r in resources.resources}
    block = status.contents[0]
    assert isinstance(block, types.TextResourceContents)
    assert json.loads(block.text)["surface"] is True


async def test_monitor_calls_leave_audit_entries_the_person_and_the_ai_both_read(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy") as client:
        await client.call_tool("saip_monitor_risk_events", {"limit": 5})
        invalid = await client.call_tool("saip_monitor_management_log", {"limit": 0, "colour": "red"})
        assert envelope(invalid)["message"].startswith("Invalid arguments for 'saip_monitor_management_log': ")

        async def logged() -> list[dict[str, Any]]:
            result = await client.call_tool(
                "saip_monitor_management_log", {"limit": 50, "tool": "saip_monitor_risk_events"}
            )
            return envelope(result)["data"]["entries"]  # type: ignore[no-any-return]

        [entry, *_] = await eventually(logged)
    assert entry["client"] == "e2e-client 1.0"
    assert (entry["level"], entry["outcome"], entry["approval"]) == ("READ", "OK", None)
    assert json.loads(entry["arguments"]) == {"limit": 5}
    with stack.api() as api:
        page = api.get("/api/v1/audit/management-log", params={"outcome": "REFUSED", "limit": 5}).json()["data"]
        risks = api.get("/api/v1/audit/risk-events", params={"type": "MANAGEMENT"}).json()["data"]
        verify = api.get("/api/v1/audit/verify").json()["data"]
    assert page["entries"][0]["tool"] == "saip_monitor_management_log"
    assert page["entries"][0]["result"].startswith("Invalid arguments for 'saip_monitor_management_log'")
    # A refused read is not a successful read: it leaves a MANAGEMENT risk event, warn because it failed.
    assert any(e["subject"] == "saip_monitor_management_log" and e["severity"] == "warn" for e in risks["entries"])
    assert verify["ok"] is True and verify["checked"] >= 2


async def test_the_surface_follows_the_token_through_the_rest_api(stack: Stack) -> None:
    legacy_changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            legacy_changed.set()

    admin = {"Authorization": f"Bearer {stack.admin_token}"}
    async with httpx.AsyncClient(base_url=stack.url, headers=admin, timeout=10) as api:
        async with (
            mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy", message_handler=on_message) as legacy,
            mcp_client(stack.mcp_url, stack.mcp_token, mode="auto") as modern,
            modern.listen(tools_list_changed=True) as events,
        ):
            assert {tool.name for tool in (await legacy.list_tools()).tools} >= MONITOR_TOOLS
            assert (await api.delete("/api/v1/mcp-token")).json()["data"] == {"removed": True}
            with anyio.fail_after(10):
                await legacy_changed.wait()
                async for event in events:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
            # No token: /mcp serves published tools only, with no management surface.
            assert not {t.name for t in (await legacy.list_tools()).tools} & MONITOR_TOOLS
            status = (await api.get("/api/v1/management/status")).json()["data"]
            assert (status["surface"], status["reason"]) == (False, "no bearer token on the built-in server")

            new_token = (await api.post("/api/v1/mcp-token")).json()["data"]["token"]
            with anyio.fail_after(10):
                async for event in events:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        # The old token no longer opens /mcp; the new one shows the surface again.
        stale = await api.post(
            "/mcp",
            headers={"Authorization": f"Bearer {stack.mcp_token}"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert stale.status_code == 401
    async with mcp_client(stack.mcp_url, new_token, mode="auto") as fresh:
        assert {tool.name for tool in (await fresh.list_tools()).tools} >= MONITOR_TOOLS
    stack.banner["MCP bearer token"] = new_token


def test_the_command_line_reaches_the_same_methods(stack: Stack) -> None:
    rotated = cli(stack, "token", "rotate")
    assert rotated.returncode == 0, rotated.stderr
    token = rotated.stdout.strip()
    assert len(token) >= 32
    stack.banner["MCP bearer token"] = token
    status = cli(stack, "status")
    assert status.returncode == 0, status.stderr
    assert "Management tools: on" in status.stdout
    assert "MCP token:        set through the API (saip token rotate)" in status.stdout
    verify = cli(stack, "audit", "verify")
    assert verify.returncode == 0 and verify.stdout.startswith("chain intact:")
    wrong = subprocess.run(
        [str(SAIP), "status"],
        env={**os.environ, "SAIP_GATEWAY_URL": stack.url, "SAIP_ADMIN_TOKEN": "not-the-admin-token"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert wrong.returncode == 1 and "refused the admin token" in wrong.stderr


async def test_an_ai_without_elicitation_can_read(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="auto") as client:
        result = await client.call_tool("saip_monitor_hitl", {"recent": 3})
    assert envelope(result)["ok"] is True


def overview_call(stack: Stack, client: str) -> None:
    """One saip_monitor_overview call as a bare 2026-07-28 HTTP request, as any client without an SDK sends it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "8"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    reply = httpx.post(
        stack.mcp_url,
        headers={
            "Authorization": f"Bearer {stack.mcp_token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "saip_monitor_overview",
        },
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "saip_monitor_overview", "arguments": {}, "_meta": meta},
        },
        timeout=10,
    )
    assert reply.status_code == 200, reply.text


def json_lines(stream: IO[str]) -> queue.Queue[dict[str, Any]]:
    """The stream's JSON lines, read on a thread so each wait for the next one can be bounded."""
    lines: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_audit_tail_prints_the_backlog_then_follows(stack: Stack) -> None:
    for _ in range(3):
        overview_call(stack, "curl")
    deadline = time.monotonic() + 15
    with stack.api() as api:
        while api.get("/api/v1/audit/management-log", params={"limit": 3}).json()["data"]["count"] < 3:
            assert time.monotonic() < deadline, "the calls were not chained within 15 s"
    env = {**os.environ, "SAIP_GATEWAY_URL": stack.url, "SAIP_ADMIN_TOKEN": stack.admin_token}
    tail = subprocess.Popen(
        [str(SAIP), "audit", "tail", "--backlog", "3", "--json"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert tail.stdout is not None
        lines = json_lines(tail.stdout)
        backlog = [lines.get(timeout=15) for _ in range(3)]
        assert all(entry["kind"] in {"management", "tool", "risk"} for entry in backlog)
        assert [entry["index"] for entry in backlog] == sorted(entry["index"] for entry in backlog)
        overview_call(stack, "tail-check")
        followed = lines.get(timeout=15)
        while followed.get("client") != "tail-check 8":  # risk events of earlier calls may come first
            followed = lines.get(timeout=15)
        assert (followed["kind"], followed["tool"]) == ("management", "saip_monitor_overview")
        assert followed["index"] > backlog[-1]["index"]
    finally:
        tail.terminate()
        tail.wait(timeout=10)
        if tail.stdout is not None:
            tail.stdout.close()
