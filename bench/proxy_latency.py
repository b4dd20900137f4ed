"""A proxied call of an exposed upstream tool through saip's /mcp against calling the same upstream directly.

The upstream is the tests' SDK server (`tests.upstreams.server`) over streamable HTTP serving `echo`, once as it
is (both eras) and once answering the 2025-11-25 handshake only (UPSTREAMS); each is registered and its tool exposed
(HITL off, so no question) through the person's REST API on a stack started as `make run` starts it. Both rows of a
pair call the same tool of the same process in the same run, so the difference is what saip adds: the gateway (bearer
check, the served-tools contract), one gRPC call to the tools service, the tools service's kept-alive SDK client to
the upstream, and the ToolCall audit record with its ProxiedCall.

Beside them, what the proxied call holds that no proxy can leave out: the tools service's own call to the upstream
(its `saip_tools_upstream_call_seconds`, the SDK client and the upstream's own time) inside the tools service's
`CallServedTool`, both means over the proxied calls; and the least one call to the upstream costs at all, a
`tools/call` sent as one bare HTTP request on a kept-alive connection with no MCP client around it (2025-11-25: the
session opened once, each call one POST, its answer read whole). Any proxy, saip's or another, pays at least that
last figure on top of what it does itself, so it is the floor under "added by saip".
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.mcp_latency import CALLS, WARMUP, _measure
from bench.stats import row, summary, table
from bench.tool_latency import _tools_time, mean_ms
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.upstreams.running import ECHO, started

ARGUMENTS = {"text": "the quick brown fox"}
SERVER = "echoes"
ERAS = (("legacy", "2025-11-25"), ("auto", "2026-07-28"))
# The tools service's time per proxied call, from its own histograms: the gRPC method, and the upstream call in it.
PROXY_TIME: tuple[tuple[str, dict[str, str]], ...] = (
    ("saip_grpc_server_handling_seconds", {"grpc_service": "saip.v1.UpstreamService"}),  # the unary or the stream
    ("saip_tools_upstream_call_seconds", {}),
)
LEGACY = "2025-11-25"
# The upstreams proxied: the SDK's server, which speaks both eras (the tools service talks 2026-07-28 to it, each
# answer one JSON body), and the same server answering the 2025-11-25 handshake only, as most deployed servers do
# (each answer an SSE stream the SDK client closes once the answer's event is in).
UPSTREAMS = (("http", "an upstream of both eras"), ("legacy", "a 2025-11-25 upstream"))


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


async def _bare_posts(url: str) -> list[float]:
    """`tools/call` of the upstream's echo as one HTTP request each, on a session opened once (2025-11-25), with no
    MCP client: each answer read whole and its JSON-RPC result checked, nothing else done with it."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=30) as http:
        hello = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        }
        opened = await http.post(url, json=hello, headers=headers)
        opened.raise_for_status()
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        (await http.post(url, json=initialized, headers=headers)).raise_for_status()
        samples = []
        for n in range(WARMUP + CALLS):
            call = {"jsonrpc": "2.0", "id": n + 1, "method": "tools/call"}
            call["params"] = {"name": "echo", "arguments": ARGUMENTS}
            started = time.perf_counter()
            answer = await http.post(url, json=call, headers=headers)
            elapsed = (time.perf_counter() - started) * 1000
            if "result" not in _message(answer):
                raise RuntimeError(f"the upstream's echo failed during the benchmark: {answer.text[:200]}")
            if n >= WARMUP:
                samples.append(elapsed)
    return samples


def _message(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer: its body, or the data of its one SSE event."""
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line.removeprefix("data:").strip() for line in answer.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1])) if data else {}
    return dict(answer.json())


def _upstream(kind: str, label: str) -> list[list[object]]:
    """The rows of one upstream process of `kind` (tests.upstreams.server's transport argument)."""
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as home, started(kind, Path(home) / "tools.json", [ECHO]) as upstream:
        (Path(home) / "saip").mkdir()
        stack = start_stack(Path(home) / "saip")
        try:
            _expose(stack, upstream.url)
            anyio.run(_served, stack)
            for mode, era in ERAS:
                direct = summary(anyio.run(_measure, upstream.url, None, "echo", ARGUMENTS, mode))
                before = _tools_time(stack.metrics["tools"], PROXY_TIME)
                proxied = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, "echo", ARGUMENTS, mode))
                after = _tools_time(stack.metrics["tools"], PROXY_TIME)
                served, upstream_call = mean_ms(before, after)
                rows.append(row(f"{label}, called directly ({era})", direct))
                rows.append(row(f"  through saip's /mcp ({era})", proxied))
                rows.append([f"  added by saip ({era})", *(proxied[q] - direct[q] for q in ("p50", "p90", "p99"))])
                rows.append([f"  the upstream called directly, mean ({era})", direct["mean"], "", ""])
                rows.append([f"  of which the tools service's CallServedTool, mean ({era})", served, "", ""])
                rows.append([f"  of which its call to the upstream, mean ({era})", upstream_call, "", ""])
                if era == LEGACY:
                    floor = summary(anyio.run(_bare_posts, upstream.url))
                    rows.append(row(f"  its tools/call as one bare HTTP request ({era})", floor))
        finally:
            stack.stop()
    return rows


def run() -> str:
    rows = [row for kind, label in UPSTREAMS for row in _upstream(kind, label)]
    return table(
        f"An exposed upstream tool, proxied against direct, {CALLS} sequential calls after {WARMUP} warm-up (ms)",
        ["", "p50", "p90", "p99"],
        rows,
    )
