"""Added latency of a READ management call (gate + audit ack + gRPC) over a bare MCP SDK tool call."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

from bench.stats import added, row, summary, table
from saip.common.natsd import free_port
from tests.e2e.stack import mcp_client, start_stack

CALLS = 300
WARMUP = 30
# A benchmark measures what the call path costs, so the per-client limit on management calls (300 a minute by
# default, fewer than one run makes) is lifted; all 2026-07-28 clients of one name and version are one client to it.
STACK_ENV = {"SAIP_MANAGEMENT_RATE_LIMIT": "0"}


async def _measure(url: str, token: str | None, tool: str, arguments: dict[str, object], mode: str) -> list[float]:
    samples = []
    async with mcp_client(url, token, mode=mode) as client:
        for n in range(WARMUP + CALLS):
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                raise RuntimeError(f"{tool} failed during the benchmark: {result.content}")
            if n >= WARMUP:
                samples.append(elapsed)
    return samples


def _wait_listening(port: int, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def run() -> str:
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.bare_server", str(port)])
    try:
        _wait_listening(port)
        with tempfile.TemporaryDirectory() as home:
            stack = start_stack(Path(home), env=STACK_ENV)
            try:
                httpx.get(f"{stack.url}/healthz", timeout=5).raise_for_status()
                rows = []
                for mode, era in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
                    base = summary(anyio.run(_measure, f"http://127.0.0.1:{port}/mcp", None, "status", {}, mode))
                    saip = summary(
                        anyio.run(_measure, stack.mcp_url, stack.mcp_token, "saip_monitor_hitl", {"recent": 1}, mode)
                    )
                    rows.append(row(f"bare MCP SDK tool ({era})", base))
                    rows.append(row(f"saip READ management ({era})", saip))
                    rows.append(added(f"added by saip ({era})", saip, base))
            finally:
                stack.stop()
    finally:
        bare.terminate()
        bare.wait(timeout=10)
    return table(
        f"MCP tool call latency over streamable HTTP, {CALLS} sequential calls after {WARMUP} warm-up (ms)",
        ["", "p50", "p90", "p99"],
        rows,
    )
