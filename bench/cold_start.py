"""Cold start of the whole embedded stack: `saip run` (what `make run` runs) to its printed connection lines, against
what no stack can start faster than (nats-server to listening, a bare Python importing the MCP SDK, FastAPI and
gRPC), and the CPU each process had spent by the time the lines were out."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench import procstat
from bench.stats import summary, table
from saip.common.natsd import LocalNats
from tests.e2e.stack import Stack, process_name, start_stack

STARTS = 5
BARE_IMPORT = "import mcp, fastapi, grpc"


def _nats_ready() -> float:
    """nats-server with JetStream from exec to accepting connections, in a fresh store (seconds)."""
    with tempfile.TemporaryDirectory() as store:
        server = LocalNats(Path(store))
        started = time.perf_counter()
        server.start()
        elapsed = time.perf_counter() - started
        server.stop()
    return elapsed


def _bare_import() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_IMPORT], check=True)
    return time.perf_counter() - started


def _cpu_seconds(stack: Stack) -> dict[str, float]:
    """User and system CPU each of the stack's processes has spent so far (the workers summed), the launcher's
    included (honcho's forks and the shells under it spend next to nothing)."""
    spent: dict[str, float] = defaultdict(float)
    for pid in [stack.process.pid, *stack.descendants()]:
        name = "launcher (saip run)" if pid == stack.process.pid else process_name(pid)
        if name is None:
            continue
        name = "sandbox worker" if name == "sandbox.worker" else name
        try:
            spent[name] += procstat.cpu_seconds(pid)
        except OSError:
            continue
    return spent


def _stack_starts() -> tuple[list[float], dict[str, list[float]]]:
    seconds: list[float] = []
    cpu: dict[str, list[float]] = defaultdict(list)
    for _ in range(STARTS):
        with tempfile.TemporaryDirectory() as home:
            started = time.perf_counter()
            stack = start_stack(Path(home))
            seconds.append(time.perf_counter() - started)
            try:
                for name, spent in _cpu_seconds(stack).items():
                    cpu[name].append(spent)
            finally:
                stack.stop()
    return seconds, cpu


def _load() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def _row(label: str, seconds: list[float]) -> list[object]:
    return [label, summary(seconds)["p50"], min(seconds), max(seconds)]


def run() -> str:
    load_before = _load()
    nats = [_nats_ready() for _ in range(STARTS)]
    bare = [_bare_import() for _ in range(STARTS)]
    seconds, cpu = _stack_starts()
    load_after = _load()
    starts = table(
        f"Cold start to the connection lines, {STARTS} starts each (seconds; load average over 1/5/15 min "
        f"{load_before} before, {load_after} after)",
        ["", "p50", "min", "max"],
        [
            _row("nats-server (JetStream) to listening (baseline)", nats),
            _row(f"python -c '{BARE_IMPORT}' (baseline)", bare),
            _row("saip run to the connection lines", seconds),
        ],
    )
    means = {name: sum(values) / len(values) for name, values in cpu.items()}
    spent = table(
        "CPU each process had spent when the lines were out (seconds, mean of the starts)",
        ["process", "cpu"],
        [
            *([name, value] for name, value in sorted(means.items(), key=lambda item: -item[1])),
            ["all", sum(means.values())],
        ],
    )
    return starts + "\n\n" + spent
