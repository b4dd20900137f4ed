"""A proxied call of an exposed upstream tool through saip's /mcp against calling the same upstream directly.

The upstream is the tests' SDK server (`tests.upstreams.server`) over streamable HTTP serving `echo`; it is
registered and its tool exposed (HITL off, so no question) through the person's REST API on the stack started as
`make run` starts it. Both rows call the same tool of the same process in the same run, so the difference is what
saip adds: the gateway (bearer check, the served-tools contract), one gRPC call to the tools service, the tools
service's kept-alive SDK client to the upstream, and the ToolCall audit record with its ProxiedCall.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio
import httpx

from bench.mcp_latency import CALLS, WARMUP, _measure
from bench.stats import summary, table
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.upstreams.running import ECHO, started

ARGUMENTS = {"text": "the quick brown fox"}
SERVER = "echoes"
ERAS = (("legacy", "2025-11-25"), ("auto", "2026-07-28"))


def _expose(stack: Stack, url: str) -> None:
    """Register the upstream and serve its `echo` on /mcp without a question (the person's side)."""
    admin = {"Authorization": f"Bearer {stack.admin_token}"}
    with httpx.Client(base_url=stack.url, headers=admin, timeout=30) as api:
        server = {"id": SERVER, "transport": "streamable-http", "url": url, "docsUrl": "https://example.com/docs"}
        api.post("/api/v1/servers", json=server).raise_for_status()
        deadline = time.monotonic() + 30
        while not any(
            found["id"] == SERVER and found["state"] == "connected"
            for found in api.get("/api/v1/servers").json()["data"]
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the upstream '{SERVER}' did not connect within 30 s")
            time.sleep(0.1)
        applied = api.post("/api/v1/exposure", json={"add": [{"serverId": SERVER, "tool": "echo", "hitl": False}]})
        if not applied.json()["ok"]:
            raise RuntimeError(f"exposing the upstream's echo was refused: {applied.json()['message']}")


def _servers(api: httpx.Client) -> list[dict[str, object]]:
    return list(api.get("/api/v1/servers").json()["data"])


async def _served(stack: Stack) -> None:
    with anyio.fail_after(30):
        while True:
            async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy") as client:
                if "echo" in {tool.name for tool in (await client.list_tools()).tools}:
                    return
            await anyio.sleep(0.1)


def run() -> str:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as home, started("http", Path(home) / "tools.json", [ECHO]) as upstream:
        (Path(home) / "saip").mkdir()
        stack = start_stack(Path(home) / "saip")
        try:
            _expose(stack, upstream.url)
            anyio.run(_served, stack)
            for mode, era in ERAS:
                direct = summary(anyio.run(_measure, upstream.url, None, "echo", ARGUMENTS, mode))
                proxied = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, "echo", ARGUMENTS, mode))
                rows.append([f"the upstream called directly ({era})", direct["p50"], direct["p90"], direct["p99"]])
                rows.append([f"through saip's /mcp ({era})", proxied["p50"], proxied["p90"], proxied["p99"]])
                rows.append([f"added by saip ({era})", *(proxied[q] - direct[q] for q in ("p50", "p90", "p99"))])
        finally:
            stack.stop()
    return table(
        f"An exposed upstream tool, proxied against direct, {CALLS} sequential calls after {WARMUP} warm-up (ms)",
        ["", "p50", "p90", "p99"],
        rows,
    )
