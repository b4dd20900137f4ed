"""A long line from a stdio upstream: saip's stdio transport against the SDK's `stdio_client`, in the same run.

The upstream is the tests' SDK server (`tests.upstreams.server stdio`), whose `huge` tool answers `size` bytes of
text on one line. Each row connects with `mcp.Client` over one transport, calls `huge` once, and gives the growth of
this process's peak resident size during the call (Linux's VmHWM, reset by `/proc/self/clear_refs` right before it)
and how long the call took to answer. saip's transport reads within `tools.upstream-max-response-bytes` at its
default (16 MiB): a 5 MiB line is read and parsed whole by both, a 50 MiB one is held whole by the SDK (it keeps
adding each chunk to the line so far) and cut by saip at the limit, the call failing with the limit's sentence.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.stats import table
from saip.tools.config import ToolsSettings
from saip.tools.upstream.stdio import stdio_transport
from tests.resident import reset_peak, resident_kib

MIB = 1024 * 1024
SIZES = (5 * MIB, 50 * MIB)
LIMIT = ToolsSettings.model_fields["tools_upstream_max_response_bytes"].default
HUGE = {"name": "huge", "inputSchema": {"type": "object"}}


async def _call(transport: Any, size: int) -> tuple[float, float, str]:
    """(peak growth in MiB, seconds to the answer, what it was) of one `huge` call over the transport."""
    async with Client(transport, mode="auto") as client:
        resident = resident_kib()
        reset_peak()
        started = time.perf_counter()
        try:
            await client.call_tool("huge", {"size": size})
            outcome = "answered"
        except Exception:  # the call past the limit fails: that is the row's outcome
            outcome = "failed at the limit"
        took = time.perf_counter() - started
        return (resident_kib("VmHWM") - resident) / 1024, took, outcome


def run() -> str:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as home:
        tools = Path(home) / "tools.json"
        tools.write_text(json.dumps([HUGE]), encoding="utf-8")
        args = ["-m", "tests.upstreams.server", "stdio", str(tools)]
        for size in SIZES:
            transports = (
                (
                    "the SDK's stdio_client",
                    lambda: stdio_client(StdioServerParameters(command=sys.executable, args=args)),
                ),
                ("saip's stdio transport", lambda: stdio_transport(sys.executable, args, {}, LIMIT)),
            )
            for label, transport in transports:
                peak, took, outcome = anyio.run(_call, transport(), size)
                rows.append([f"{size // MIB} MiB line, {label}", peak, took, outcome])
    return table(
        f"One line from a stdio upstream, limit {LIMIT // MIB} MiB: peak resident growth (MiB), time to the answer (s)",
        ["", "peak +MiB", "s", "outcome"],
        rows,
    )


if __name__ == "__main__":
    print(run())
