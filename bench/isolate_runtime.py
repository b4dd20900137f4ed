"""What one sandbox call costs in its own isolate: `Isolate.prepare` (a fresh isolate, the runtime of `js/runtime.js`
evaluated and set up) then `run`, in this process, for a call that returns at once and one that waits on a timer.

With `python -m bench.isolate_runtime <runtime.js>`, the same calls also run on isolates given that runtime instead
(the one a change replaces, e.g. `git show main:libs/sandbox/src/saip/sandbox/js/runtime.js`), in the same run:
rounds of each, alternated, so both see the same load. The figures are this process's CPU (all its threads, V8's
too, from /proc) per call, and the wall-clock p50 of a call.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from bench.procstat import cpu_seconds
from bench.stats import percentile, table
from saip.sandbox import isolate
from saip.sandbox.job import Job

ROUNDS = 5
CALLS = 100
CODES = {
    "returns at once": "return 1",
    "awaits a 1 ms timer": "await new Promise((done) => setTimeout(done, 1)); return 1",
}


async def _round(runtime: str, code: str) -> tuple[float, list[float]]:
    """(CPU seconds, wall seconds of each call) of CALLS calls, each on an isolate of its own with `runtime`."""
    isolate.RUNTIME = runtime  # what `Isolate.prepare` evaluates: the one thing that differs between the rows
    job = Job(code=code, arguments={}, statics={})
    walls = []
    spent = cpu_seconds(os.getpid())
    for _ in range(CALLS):
        started = time.perf_counter()
        made = await isolate.Isolate.prepare(job.memory_bytes, warm=False)
        try:
            outcome = await made.run(job)
        finally:
            await made.close()
        if not outcome.ok:
            raise RuntimeError(f"the benchmark's call failed: {outcome.error}")
        walls.append(time.perf_counter() - started)
    return cpu_seconds(os.getpid()) - spent, walls


async def _measure(runtimes: dict[str, str]) -> list[list[object]]:
    rows: list[list[object]] = []
    for case, code in CODES.items():
        cpu = dict.fromkeys(runtimes, 0.0)
        walls: dict[str, list[float]] = {name: [] for name in runtimes}
        for _ in range(ROUNDS):
            for name, runtime in runtimes.items():
                spent, took = await _round(runtime, code)
                cpu[name] += spent
                walls[name] += took
        for name in runtimes:
            calls = ROUNDS * CALLS
            rows.append([f"{case}, {name}", cpu[name] / calls * 1000, percentile(walls[name], 50) * 1000])
    return rows


def run(baseline: Path | None = None) -> str:
    installed = isolate.RUNTIME
    runtimes = {"this runtime": installed}
    if baseline is not None:
        runtimes["the baseline's"] = baseline.read_text(encoding="utf-8")
    try:
        rows = asyncio.run(_measure(runtimes))
    finally:
        isolate.RUNTIME = installed
    load = os.getloadavg()[0]
    title = f"A sandbox call on its own isolate: {ROUNDS} x {CALLS} calls a row, load average {load:.2f} at the end"
    return table(title, ["call", "CPU ms per call", "wall p50 ms"], rows)


if __name__ == "__main__":
    print(run(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
