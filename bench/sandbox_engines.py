"""The sandbox's candidate engines side by side, in one run: the CPU of a fresh state plus one word-count call, a
CPU-heavy tool, the memory cap and a busy loop's interruption (docs/sandbox.md records a run and the choice).

Each engine gets the same work through its own public API: a fresh state (what each call would get), the runtime of
`js/runtime.js` evaluated in it (given a host door that answers nothing: the calls here never use it), then the call
through the runtime's `__saipRun` and `__saipReport`. saip's engine reads both scripts (the runtime and its web helpers,
`js/web/` as one script) as bytecode, and the web helpers only when a call names one of them; the others parse both from
their source. The engines are saip's own (QuickJS-ng, `saip.sandbox`) and whichever of these are installed, none of them
a dependency of saip (`pip install mini-racer stpyv8 quickjs-ng quickjs-rs` into the environment for a full run; a
missing one is named and left out):

- mini-racer (V8): a new MiniRacer, an isolate of its own, for each call (the sandbox's engine before this one);
- stpyv8 (V8): a new context in one warm isolate for each call;
- quickjs-ng (QuickJS-ng's Python binding): a new Context, a runtime of its own, for each call; no bytecode, so
  the runtime is parsed from its source every time;
- quickjs-rs (QuickJS-ng in WebAssembly under wasmtime): a new context in one warm instance for each call.

The memory cap and the busy loop run in a child process each (`python -m bench.sandbox_engines probe ENGINE CASE`),
so an engine that ends its process on them is seen doing so.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.stats import table
from saip.sandbox.isolate import Isolate, runtime_source, web_source
from saip.sandbox.job import Job

CALLS = 200
ROUNDS = 3
WORD_COUNT = "return { words: text.trim() ? text.trim().split(/\\s+/).length : 0 };"
BINDINGS = {"text": "the quick brown fox jumps over the lazy dog"}
# A compute-bound tool: primes by trial division, a sort and a JSON round trip of what it found.
HEAVY = (
    "const primes = []; for (let n = 2; primes.length < 3000; n++) { let p = true;"
    " for (let d = 2; d * d <= n; d++) if (n % d === 0) { p = false; break; } if (p) primes.push(n); }"
    " const sorted = primes.map((p) => ({ p, key: (p * 7919) % 1000 })).sort((a, b) => a.key - b.key);"
    " return JSON.parse(JSON.stringify(sorted)).length;"
)
HEAVY_CALLS = 20
HEAP_BOMB = "const a = []; while (true) a.push(new Array(100000).fill(1));"
BUSY_LOOP = "while (true) {}"
MEMORY = 32 * 1024 * 1024
TIMEOUT = 0.5


def _setup(own_timers: bool = False) -> str:
    """The runtime evaluated and set up with a door that answers nothing and its web helpers parsed with it, its entry
    kept as a global (`own_timers`: the engine's own setTimeout and clearTimeout left in place, as mini-racer's
    cannot be redefined)."""
    source = runtime_source().strip()
    if own_timers:
        timers = "Object.entries({ setTimeout, clearTimeout })"
        if timers not in source:
            raise RuntimeError("js/runtime.js no longer defines its timers as this benchmark expects")
        source = source.replace(timers, "Object.entries({})")
    web = web_source().strip()
    return f"globalThis.__entry = ({source})(() => undefined, () => [({web}), '{os.urandom(16).hex()}']); 1"


def _run(code: str) -> str:
    return f"__saipRun({json.dumps(json.dumps(BINDINGS))}, {json.dumps(code)}, 10); 1"


REPORT = "__saipReport()"


def _said(evaluate: Callable[[], object]) -> str:
    """What a probe's evaluation answered, or the exception it raised, named."""
    try:
        return str(evaluate())
    except Exception as error:  # each engine raises its own kinds
        return f"{type(error).__name__}: {str(error)[:80]}"


class Saip:
    name = "saip: QuickJS-ng, a runtime per call, runtime as bytecode"
    module = "saip.sandbox._engine"

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()  # a worker's: one loop for every call

    def fresh_call(self, code: str) -> str:
        async def once() -> str:
            isolate = Isolate.prepare(warm=False)
            try:
                outcome = await isolate.run(Job(code=code, arguments=BINDINGS, statics={}))
            finally:
                isolate.close()
            return outcome.result_json or outcome.error

        return self._loop.run_until_complete(once())

    def probe(self, code: str) -> str:
        async def once() -> str:
            isolate = Isolate.prepare(warm=False)
            try:
                job = Job(code=code, arguments={}, statics={}, timeout=TIMEOUT, memory_bytes=MEMORY)
                return (await isolate.run(job)).error
            finally:
                isolate.close()

        return asyncio.run(once())


class MiniRacer:
    name = "mini-racer 0.14 (V8): an isolate per call"
    module = "py_mini_racer"

    def fresh_call(self, code: str) -> str:
        from py_mini_racer import MiniRacer as Racer

        with Racer() as ctx:
            ctx.eval(_setup(own_timers=True))
            ctx.eval(_run(code))
            return str(ctx.eval(REPORT))

    def probe(self, code: str) -> str:
        from py_mini_racer import MiniRacer as Racer

        with Racer() as ctx:
            ctx.set_hard_memory_limit(MEMORY)
            ctx.eval(_setup(own_timers=True))
            return _said(lambda: (ctx.eval(_run(code), timeout_sec=TIMEOUT), ctx.eval(REPORT))[1])


class StPyV8:
    name = "stpyv8 13.1 (V8): a context per call in a warm isolate"
    module = "STPyV8"

    def __init__(self) -> None:
        self._isolate: Any = None

    def fresh_call(self, code: str) -> str:
        import STPyV8

        if self._isolate is None:
            self._isolate = STPyV8.JSIsolate()
            self._isolate.enter()
        with STPyV8.JSContext() as ctx:
            ctx.eval(_setup())
            ctx.eval(_run(code))
            return str(ctx.eval(REPORT))

    def probe(self, code: str) -> str:
        import STPyV8

        # No per-isolate heap cap in its API; the busy loop is ended by terminating the isolate's execution.
        threading.Timer(TIMEOUT, STPyV8.JSEngine.terminateAllThreads).start()
        with STPyV8.JSIsolate(), STPyV8.JSContext() as ctx:
            ctx.eval(_setup())
            return _said(lambda: (ctx.eval(_run(code)), ctx.eval(REPORT))[1])


class QuickJsBinding:
    name = "quickjs-ng 0.17 binding: a runtime per call, runtime from source"
    module = "quickjs"

    def fresh_call(self, code: str) -> str:
        import quickjs

        ctx = quickjs.Context()
        ctx.eval(_setup())
        ctx.eval(_run(code))
        while ctx.execute_pending_job():
            pass
        return str(ctx.eval(REPORT))

    def probe(self, code: str) -> str:
        import quickjs

        ctx = quickjs.Context()
        ctx.eval(_setup())
        ctx.set_memory_limit(MEMORY + 1024 * 1024)
        ctx.set_time_limit(TIMEOUT)  # CPU time, not the wall clock

        def evaluate() -> object:
            ctx.eval(_run(code))
            while ctx.execute_pending_job():
                pass
            return ctx.eval(REPORT)

        return _said(evaluate)


class QuickJsWasm:
    name = "quickjs-rs 0.2 (QuickJS-ng in wasmtime): a context per call in a warm instance"
    module = "quickjs_rs"

    def __init__(self) -> None:
        self._runtime: Any = None
        self._loop = asyncio.new_event_loop()  # its job queue runs in eval_async only

    def fresh_call(self, code: str) -> str:
        from quickjs_rs import Runtime

        if self._runtime is None:
            self._runtime = Runtime(memory_limit=256 * 1024 * 1024)
        ctx = self._runtime.new_context(timeout=30)
        try:
            ctx.eval(_setup())
            self._loop.run_until_complete(ctx.eval_async(_run(code)))
            return str(ctx.eval(REPORT))
        finally:
            ctx.close()

    def probe(self, code: str) -> str:
        from quickjs_rs import Runtime

        with Runtime(memory_limit=MEMORY + 1024 * 1024) as runtime:
            ctx = runtime.new_context(timeout=TIMEOUT)
            ctx.eval(_setup())
            return _said(lambda: (asyncio.run(ctx.eval_async(_run(code))), ctx.eval(REPORT))[1])


ENGINES: dict[str, Callable[[], Any]] = {
    "saip": Saip,
    "mini-racer": MiniRacer,
    "stpyv8": StPyV8,
    "quickjs-ng": QuickJsBinding,
    "quickjs-rs": QuickJsWasm,
}


def _installed(engine: Any) -> bool:
    try:
        return importlib.util.find_spec(engine.module) is not None
    except ModuleNotFoundError:
        return False


def _cpu_ms(engine: Any, code: str, calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        engine.fresh_call(code)
    return (time.process_time() - started) / calls * 1000


def _probe(key: str, code: str) -> str:
    """The case in a child process: its answer, how long it took, or how the process ended."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.sandbox_engines", "probe", key, code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return f"the process ended ({done.returncode}) after {seconds:.2f} s"
    return f"{done.stdout.strip()[:70]} ({seconds:.2f} s)"


def run() -> str:
    engines = {key: make() for key, make in ENGINES.items()}
    present = {key: engine for key, engine in engines.items() if _installed(engine)}
    for engine in present.values():
        answer = engine.fresh_call(WORD_COUNT)
        if "9" not in answer:
            raise RuntimeError(f"{engine.name} answered {answer!r}")
    small = dict.fromkeys(present, 0.0)
    heavy = dict.fromkeys(present, 0.0)
    for _ in range(ROUNDS):  # alternately, so every engine sees the same moments of the machine
        for key, engine in present.items():
            small[key] += _cpu_ms(engine, WORD_COUNT, CALLS) / ROUNDS
            heavy[key] += _cpu_ms(engine, HEAVY, HEAVY_CALLS) / ROUNDS
    rows: list[list[object]] = []
    for key, engine in present.items():
        rows.append([engine.name, small[key], heavy[key], _probe(key, HEAP_BOMB), _probe(key, BUSY_LOOP)])
    missing = [engine.name for key, engine in engines.items() if key not in present]
    title = (
        f"Sandbox engines, CPU ms a call with a fresh state ({ROUNDS} x {CALLS} word counts, {ROUNDS} x {HEAVY_CALLS} "
        f"CPU-heavy calls), a heap bomb under a {MEMORY // 2**20} MiB cap and a busy loop under {TIMEOUT:g} s"
    )
    columns = ["engine", "word count", "CPU-heavy", "heap bomb", "busy loop"]
    lines = [table(title, columns, rows)]
    lines += [f"  not installed, left out: {name}" for name in missing]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "probe":
        print(ENGINES[sys.argv[2]]().probe(sys.argv[3]).replace("\n", " "))
    else:
        print(run())
