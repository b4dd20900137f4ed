"""Shipped servers on the stack started as `make run` starts it: ship + run on the local target to the first answered
call (seconds, each step timed), and one knowledge tool called on the shipped server against the same tool through
saip's /mcp (the gateway, the knowledge service, the audit record), both over streamable HTTP, same run."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio
import httpx

from bench.mcp_latency import _measure
from bench.stats import summary, table
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


async def _served(url: str, token: str) -> None:
    with anyio.fail_after(15):
        while True:
            async with mcp_client(url, token, mode="legacy") as client:
                if TOOL in {tool.name for tool in (await client.list_tools()).tools}:
                    return
            await anyio.sleep(0.1)


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
        ]
    )
