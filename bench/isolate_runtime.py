"""What one sandbox call costs in its own isolate: `Isolate.prepare` (a fresh QuickJS runtime and context, the
runtime of `js/runtime.js` evaluated from its bytecode) then `run` and `close`, in this process, for the word count
of `bench tool_latency`, a call that returns at once and one that waits on a timer.

With `python -m bench.isolate_runtime <folder>`, the same calls also run on isolates given the `runtime.js` and
`web/` (or a `web.js`) of that folder instead (the ones a change replaces, e.g. `git archive main
libs/sandbox/src/saip/sandbox/js` unpacked), in the same run: rounds of each, alternated, so both see the same load.
The figures are this process's CPU per call (issue 31's target: at most 0.5 ms for the word count, fresh state
included), and the wall-clock p50 of a call.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from bench.stats import percentile, table
from saip.sandbox.isolate import Bytecode, Isolate, runtime_bytecode, web_source
from saip.sandbox.job import Job

ROUNDS = 5
CALLS = 200
WORD_COUNT = "return { words: text.trim() ? text.trim().split(/\\s+/).length : 0 };"
CODES: dict[str, tuple[str, dict[str, object]]] = {
    "word count": (WORD_COUNT, {"text": "the quick brown fox jumps over the lazy dog"}),
    "returns at once": ("return 1", {}),
    "awaits a 1 ms timer": ("await new Promise((done) => setTimeout(done, 1)); return 1", {}),
}


async def _round(bytecode: Bytecode, code: str, arguments: dict[str, object]) -> tuple[float, list[float]]:
    """(CPU seconds, wall seconds of each call) of CALLS calls, each on an isolate of its own with `bytecode`."""
    job = Job(code=code, arguments=arguments, statics={})
    walls = []
    spent = time.process_time()
    for _ in range(CALLS):
        started = time.perf_counter()
        made = Isolate.prepare(warm=False, bytecode=bytecode)
        try:
            outcome = await made.run(job)
        finally:
            made.close()
        if not outcome.ok:
            raise RuntimeError(f"the benchmark's call failed: {outcome.error}")
        walls.append(time.perf_counter() - started)
    return time.process_time() - spent, walls


async def _measure(runtimes: dict[str, Bytecode]) -> list[list[object]]:
    rows: list[list[object]] = []
    for case, (code, arguments) in CODES.items():
        cpu = dict.fromkeys(runtimes, 0.0)
        walls: dict[str, list[float]] = {name: [] for name in runtimes}
        for _ in range(ROUNDS):
            for name, bytecode in runtimes.items():
                spent, took = await _round(bytecode, code, arguments)
                cpu[name] += spent
                walls[name] += took
        for name in runtimes:
            calls = ROUNDS * CALLS
            rows.append([f"{case}, {name}", cpu[name] / calls * 1000, percentile(walls[name], 50) * 1000])
    return rows


def run(baseline: Path | None = None) -> str:
    runtimes = {"this runtime": runtime_bytecode()}
    if baseline is not None:
        runtime = (baseline / "runtime.js").read_text(encoding="utf-8")
        whole = baseline / "web.js"  # the web helpers as one file, as they were before js/web/
        web = whole.read_text(encoding="utf-8") if whole.is_file() else web_source(baseline)
        runtimes["the baseline's"] = Bytecode.compile(runtime, web)
    rows = asyncio.run(_measure(runtimes))
    title = f"A sandbox call on a fresh isolate, in-process: {ROUNDS} x {CALLS} calls a row"
    return table(title, ["call", "CPU ms per call", "wall p50 ms"], rows)


if __name__ == "__main__":
    print(run(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
