"""Shipped servers on the stack started as `make run` starts it: ship + run on the local target to the first answered
call (seconds, each step timed); one knowledge tool called on the shipped server against the same tool through
saip's /mcp (the gateway, the knowledge service, the audit record), both over streamable HTTP, same run; and a
published JavaScript tool on a shipped server (the shipped-server runtime's own sandbox) against the same tool as
native Python on a bare MCP SDK server, both eras, as `bench tool_latency` measures it through saip's /mcp."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

from bench.mcp_latency import _measure, _wait_listening
from bench.stats import added, row, summary, table
from bench.tool_latency import ARGUMENTS, ERAS, _publish
from saip.common.natsd import free_port
from tests.e2e.stack import Stack, mcp_client, start_stack

SHIPS = 3
TOOL = "broker_answers"
QUESTION = {"query": "restart the broker when clients report stale connections"}
RUNBOOK = "\n\n".join(
    f"## Step {n}\n\nRestart the NATS broker with systemctl when clients report stale connections; JetStream keeps "
    f"stream {n} on disk, so consumers resume from their last acknowledged message."
    for n in range(40)
)


def _api(stack: Stack) -> httpx.Client:
    headers = {"Authorization": f"Bearer {stack.admin_token}"}
    return httpx.Client(base_url=f"{stack.url}/api/v1", headers=headers, timeout=660)


def _data(reply: httpx.Response) -> dict[str, object]:
    body = reply.json()
    if not body["ok"]:
        raise RuntimeError(body["message"])
    data: dict[str, object] = body["data"]
    return data


async def _first_call(endpoint: str, token: str) -> None:
    async with mcp_client(endpoint, token, mode="legacy") as client:
        result = await client.call_tool(TOOL, QUESTION)
    if result.is_error:
        raise RuntimeError(f"the shipped {TOOL} failed: {result.content}")


async def _served(url: str, token: str, tool: str = TOOL) -> None:
    with anyio.fail_after(15):
        while True:
            async with mcp_client(url, token, mode="legacy") as client:
                if tool in {listed.name for listed in (await client.list_tools()).tools}:
                    return
            await anyio.sleep(0.1)


def _authored(stack: Stack, api: httpx.Client) -> list[list[object]]:
    """The word count as a published JS tool on a shipped server of its own, against the bare server's native one."""
    _publish(stack.url, stack.admin_token)
    _data(api.post("/shipyard/servers", json={"name": "counter", "description": "Counts.", "tools": ["word-count"]}))
    _data(api.post("/shipyard/servers/counter/run", json={}))
    token = _data(api.get("/shipyard/servers/counter/token"))
    endpoint, secret = str(token["endpoint"]), str(token["token"])
    anyio.run(_served, endpoint, secret, "word-count")
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.bare_server", str(port)])
    rows: list[list[object]] = []
    try:
        _wait_listening(port)
        for mode, era in ERAS:
            base = summary(anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", None, "word_count", ARGUMENTS, mode))
            js = summary(anyio.run(_measure, endpoint, secret, "word-count", ARGUMENTS, mode))
            rows += [
                row(f"native Python tool, bare MCP SDK ({era}, beside the next row)", base),
                row(f"published JS tool on the shipped server ({era})", js),
                added(f"added by the shipped server ({era})", js, base),
            ]
    finally:
        bare.terminate()
        bare.wait(timeout=10)
        _data(api.post("/shipyard/servers/counter/stop"))
    return rows


def run() -> str:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack(Path(home))
        try:
            with _api(stack) as api:
                _data(api.post("/knowledge/documents", json={"text": RUNBOOK, "name": "runbook.md"}))
                body = {"name": TOOL, "description": "Answers broker questions.", "pipeline": "All documents (simple)"}
                _data(api.post("/knowledge/tools", json=body))
                proposal = {"name": "broker", "description": "Broker answers.", "tools": [TOOL]}
                steps: dict[str, list[float]] = {"ship": [], "run": [], "first call": [], "total": []}
                for n in range(SHIPS):
                    started = time.perf_counter()
                    _data(api.post("/shipyard/servers", json=proposal))
                    shipped = time.perf_counter()
                    _data(api.post("/shipyard/servers/broker/run", json={}))
                    ran = time.perf_counter()
                    token = _data(api.get("/shipyard/servers/broker/token"))
                    anyio.run(_first_call, str(token["endpoint"]), str(token["token"]))
                    answered = time.perf_counter()
                    for step, seconds in (
                        ("ship", shipped - started),
                        ("run", ran - shipped),
                        ("first call", answered - ran),
                        ("total", answered - started),
                    ):
                        steps[step].append(seconds)
                    if n < SHIPS - 1:
                        _data(api.post("/shipyard/servers/broker/stop"))
                for step, samples in steps.items():
                    rows.append([f"ship + run: {step} (s, of {SHIPS})", min(samples), max(samples)])
                anyio.run(_served, stack.mcp_url, stack.mcp_token)
                shipped_ms = summary(
                    anyio.run(_measure, str(token["endpoint"]), str(token["token"]), TOOL, QUESTION, "legacy")
                )
                saip_ms = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, TOOL, QUESTION, "legacy"))
                _data(api.post("/shipyard/servers/broker/stop"))
                authored = _authored(stack, api)
        finally:
            stack.stop()
    calls = [
        ["knowledge tool on the shipped server (ms)", shipped_ms["p50"], shipped_ms["p90"], shipped_ms["p99"]],
        ["the same tool through saip's /mcp (ms)", saip_ms["p50"], saip_ms["p90"], saip_ms["p99"]],
    ]
    return "\n\n".join(
        [
            table("Ship and run on the local target, to the first answered call", ["", "min", "max"], rows),
            table("A knowledge tool call over streamable HTTP, 2025-11-25", ["", "p50", "p90", "p99"], calls),
            table("A JS tool call on a shipped server over streamable HTTP (ms)", ["", "p50", "p90", "p99"], authored),
        ]
    )
