"""One single-use isolate: a QuickJS runtime of its own with one context, the runtime of `js/runtime.js` evaluated in
it, used by one call, discarded.

`Isolate.prepare` makes it (a new QuickJS runtime and context, the runtime's bytecode, compiled once a process,
evaluated; the web helpers' bytecode and the call's random pool handed over only when the code names one of them): a
fraction of a millisecond of CPU, in this thread. `run` then sets the call's memory budget and deadline, binds the
call's arguments and static values as globals and runs the code; every promise job runs before the context is asked
how the call stands, and the host's replies (fetch, digests, HMAC, timers: `saip.sandbox.door`, the only way out of
the context) are handed in as they arrive. The deadline is the interpreter's own (polled every few thousand
operations, in every function and promise job, and not catchable), so a busy loop ends the call wherever it runs;
the budget counts every allocation, array buffers included, so a heap bomb ends it too. Neither ends the worker. A
runtime of its own per call means that no object, job or string of one call can be reached from another.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import string
import time
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable

from saip.sandbox import _engine
from saip.sandbox.door import Call, Door
from saip.sandbox.job import MEMORY_LIMIT, RESULT_TOO_LARGE, TIME_LIMIT, Job, Outcome

RANDOM_BYTES = 4096
# What reading the console of a stopped call may take: its memory (the console is capped at 1000 lines of 2000
# characters) and its time.
REPORT_MEMORY = 32 * 1024 * 1024
REPORT_WITHIN = 1.0
# The engine's refusal of an array buffer longer than it allows (2 GiB): past the memory cap of any call.
BUFFER_REFUSED = "RangeError: invalid array buffer length"
MAX_ERROR_CHARS = 2000


# The web helpers as the one script a context evaluates: each file of js/web/ is a function expression given what it
# needs of the others (`text` is the byte helpers of text.js, `call` the host door's request of door.js).
WEB_SCRIPT = string.Template("""\
// The web helpers of the runtime (js/runtime.js): UTF-8, base64, URL, URLSearchParams, Headers, fetch and crypto.
// A context reads this script only when its code first names one of them (the runtime's `load`), so a call that uses
// none of them pays neither for reading it nor for making them. The script's value is a function of what the
// runtime took before the code ran: the host door's request function and the call's random pool.
(function (host, randomHex) {
  "use strict";
  const text = ($text)();
  const { URL, URLSearchParams } = ($url)();
  const call = ($door)(host);
  const { Headers, Response, fetch } = ($fetch)(call, text, URL, URLSearchParams);
  const crypto = ($crypto)(call, text, randomHex);
  const { TextEncoder, TextDecoder, atob, btoa } = text;
  return {
    __proto__: null, TextEncoder, TextDecoder, atob, btoa, URL, URLSearchParams, Headers, Response, fetch, crypto,
  };
})
""")
WEB_PARTS = ("text", "url", "door", "fetch", "crypto")


def _js() -> Traversable:
    return resources.files("saip.sandbox").joinpath("js")


def runtime_source() -> str:
    """The source of `js/runtime.js`."""
    return _js().joinpath("runtime.js").read_text(encoding="utf-8")


def web_source(js: Traversable | None = None) -> str:
    """The runtime's web helpers as one script: the files of `js/web/` (of `js`, another runtime's folder, for the
    benchmarks) composed into one function expression, so that a context evaluates them at once, as one bytecode."""
    web = (_js() if js is None else js).joinpath("web")
    parts = {part: web.joinpath(f"{part}.js").read_text(encoding="utf-8").strip() for part in WEB_PARTS}
    return WEB_SCRIPT.substitute(parts)


@dataclass(frozen=True)
class Bytecode:
    """The runtime and its web helpers compiled, without their source text or debug information."""

    runtime: bytes
    web: bytes

    @classmethod
    def compile(cls, runtime: str, web: str) -> Bytecode:
        compiler = _engine.Runtime()
        return cls(compiler.compile(runtime, "runtime.js"), compiler.compile(web, "web.js"))


@functools.cache
def runtime_bytecode() -> Bytecode:
    """`js/runtime.js` and the web helpers of `js/web/`, compiled once a process."""
    return Bytecode.compile(runtime_source(), web_source())


@dataclass
class _Report:
    """How the call stands, as the runtime's report says (the code runs in that context, so every field is checked)."""

    state: str
    value: str = ""
    error: str = ""
    logs: list[str] = field(default_factory=list)
    dropped: int = 0

    @classmethod
    def parse(cls, text: object) -> _Report:
        try:
            data = json.loads(str(text))
            logs = data.get("logs")
            return cls(
                state=str(data["state"]),
                value=str(data.get("value", "")),
                error=str(data.get("error", "")),
                logs=[str(line) for line in logs] if isinstance(logs, list) else [],
                dropped=int(data.get("dropped", 0)),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls(state="failed", error="The code broke the sandbox's report of its own run; do not replace JSON.")


def bindings(job: Job) -> str:
    """The call's globals as JSON: its arguments and static values (a static value wins over an argument)."""
    return json.dumps({**job.arguments, **job.statics})


class Isolate:
    """A QuickJS runtime and context with the runtime evaluated, for exactly one call; `close` discards it."""

    def __init__(self, runtime: _engine.Runtime, context: _engine.Context, *, warm: bool) -> None:
        self._runtime = runtime
        self._context = context
        self.warm = warm
        self.used = False

    @classmethod
    def prepare(cls, *, warm: bool = True, bytecode: Bytecode | None = None) -> Isolate:
        """Make an isolate ready for a call (`bytecode`: another runtime's, for the benchmarks)."""
        compiled = runtime_bytecode() if bytecode is None else bytecode
        runtime = _engine.Runtime()
        context = runtime.context(compiled.runtime, compiled.web, os.urandom(RANDOM_BYTES))
        return cls(runtime, context, warm=warm)

    async def run(self, job: Job) -> Outcome:
        """Run the job; never raises for what the code does. The isolate is spent afterwards, whatever happened."""
        if self.used:
            raise RuntimeError("an isolate serves one call; prepare another")
        self.used = True
        outcome = Outcome(ok=False, warm=self.warm)
        started = time.monotonic()
        call = Call(job, outcome, started + job.timeout)
        self._runtime.limit(job.memory_bytes, call.deadline)
        report: _Report | None = None
        try:
            report = await self._call(call)
        except TimeoutError:
            _refuse(outcome, TIME_LIMIT, _over_time(job))
        except _engine.ScriptError as exc:
            if self._runtime.interrupted:
                _refuse(outcome, TIME_LIMIT, _over_time(job))
            elif self._runtime.refused:
                _refuse(outcome, MEMORY_LIMIT, _over_memory(job))
            else:
                outcome.error = _first_line(str(exc))
        else:
            if self._runtime.refused:  # even when the code caught the failed allocation: the cap was reached
                _refuse(outcome, MEMORY_LIMIT, _over_memory(job))
            else:
                _settle(outcome, report, job)
        if report is None:
            report = self._last_report()
        if report is not None:
            outcome.console = report.logs
            outcome.console_dropped = report.dropped
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome

    async def _call(self, call: Call) -> _Report:
        """Start the code and hand the host's replies in until it settles. A code that settles at once (it awaited
        nothing of the host's) never opens the door; what a settled code still asked for is not served."""
        context, job = self._context, call.job
        context.call("run", bindings(job), job.code, str(int(job.console_cap)))
        report = _Report.parse(context.call("report"))
        if report.state != "running":
            return report
        door = Door(call)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(loop.time() + call.deadline - time.monotonic()):
                while report.state == "running":
                    door.knock(context.take())
                    ident, reply = await door.replies.get()
                    context.call("answer", ident, reply)
                    while not door.replies.empty():  # the replies that arrived meanwhile, then one report
                        context.call("answer", *door.replies.get_nowait())
                    report = _Report.parse(context.call("report"))
        finally:
            await door.close()
        return report

    def _last_report(self) -> _Report | None:
        """The console of a stopped call, when the context can still say it within a small budget."""
        self._runtime.limit(REPORT_MEMORY, time.monotonic() + REPORT_WITHIN)
        try:
            return _Report.parse(self._context.call("report"))
        except _engine.ScriptError:
            return None

    def close(self) -> None:
        self._context.close()


def _settle(outcome: Outcome, report: _Report, job: Job) -> None:
    if report.state != "done":
        outcome.error = report.error[:MAX_ERROR_CHARS]
        if outcome.error.startswith(BUFFER_REFUSED):
            outcome.guard_blocks.append(
                (MEMORY_LIMIT, "The code asked for more memory than the sandbox allows (an array buffer too large).")
            )
    elif len(report.value) > job.max_result_chars:
        _refuse(outcome, RESULT_TOO_LARGE, f"The result is larger than {job.max_result_chars} characters; return less.")
    else:
        outcome.ok = True
        outcome.result_json = report.value


def _refuse(outcome: Outcome, reason: str, message: str) -> None:
    outcome.error = message
    outcome.guard_blocks.append((reason, message))


def _over_time(job: Job) -> str:
    return f"The code ran longer than the {job.timeout:g} s wall-clock limit and was stopped."


def _over_memory(job: Job) -> str:
    return f"The code used more than the {job.memory_bytes // (1024 * 1024)} MiB memory cap and was stopped."


def _first_line(text: str) -> str:
    text = text.strip()
    return (text.splitlines()[0] if text else "The code failed without saying why.")[:MAX_ERROR_CHARS]


def run_job(job: Job) -> Outcome:
    """One job on a fresh isolate in this process, cold (what a worker does, without the pool around it)."""

    async def once() -> Outcome:
        isolate = Isolate.prepare(warm=False)
        try:
            return await isolate.run(job)
        finally:
            isolate.close()

    return asyncio.run(once())
