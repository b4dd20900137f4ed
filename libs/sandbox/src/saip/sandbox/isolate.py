"""One single-use V8 isolate: made and given the runtime before its call arrives, used by that call, discarded.

`Isolate.prepare` does the costly part (a new isolate and context, the host door wired, the runtime of
`js/runtime.js` evaluated, a fresh random pool), pausing between its steps so a worker can do it between calls. `run`
then binds the call's arguments and static values as globals and runs the code: two short trips into V8 when the
code settles at once, one more when it awaits the host. The only way out of V8 is the host door, which serves fetch
(through the network guard, under the tool's own policy, which substitutes the call's secrets for their
placeholders in requests to the hosts they are bound to), digests and HMAC; every refusal comes back with its
reason, so the service raises the risk events.

Every trip into V8 costs about half a millisecond of CPU in mini-racer's machinery whatever it runs, and a worker
makes an isolate for every call, so preparing takes two: the runtime's evaluation and its setup call. The door is
wired as mini-racer's one-way notification, which the runtime wraps in a promise itself, rather than through
`wrap_py_function`, whose wrapper costs two synchronous trips more per isolate (and builds its promise from the
global `Promise`, which the code may replace). That uses three private names of mini-racer (`_ctx`,
`_register_js_notification`, `_value_handle_to_python`); its version is pinned below 0.15, and every sandbox test
goes through the door.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from py_mini_racer import JSEvalException, JSOOMException, JSPromiseError, mini_racer

from saip.common.netguard import GuardBlocked, NetPolicy, NetworkMode, guarded_fetch
from saip.sandbox.job import FETCH_LIMIT, MEMORY_LIMIT, RESULT_TOO_LARGE, TIME_LIMIT, Job, Outcome

RUNTIME = resources.files("saip.sandbox").joinpath("js/runtime.js").read_text(encoding="utf-8")
RANDOM_BYTES = 4096
MAX_FETCHES = 50
MAX_HOST_PAYLOAD = 16 * 1024 * 1024
# How long the console of a stopped run may take to read; an isolate that cannot answer within it is wedged.
REPORT_WITHIN = 1.0
ARRAY_BUFFER_FAILED = "Array buffer allocation failed"
MAX_ERROR_CHARS = 2000

Pause = Callable[[], Awaitable[object]]


async def _no_pause() -> None:
    return None


@dataclass
class _Call:
    job: Job
    outcome: Outcome
    deadline: float
    fetches: int = 0


@dataclass
class _Report:
    """How the call stands, as `__saipReport` says (the code runs in that isolate, so every field is checked)."""

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


class _Door:
    """The one door out of V8: fetch under the policy, digests, HMAC; and the knock that says the code settled."""

    def __init__(self) -> None:
        self.call: _Call | None = None
        self.settled = asyncio.Event()

    @contextlib.asynccontextmanager
    async def wired(self, context: Any) -> AsyncIterator[Any]:
        """The door as the JS function the runtime is set up with: mini-racer's one-way notification, called with
        `[op, payload]` and the resolve function of the promise the runtime hands the code (every answer resolves
        it, a refusal or a fault as `{"error": ...}`), or with `["settled"]` alone, the knock that says the code
        settled. Each is answered in a task of its own; those still running when the isolate is discarded are
        cancelled."""
        inner = context._ctx
        answering: set[asyncio.Task[None]] = set()

        def knocked(handle: Any) -> None:
            task = asyncio.get_running_loop().create_task(self._answer(inner, handle))
            answering.add(task)
            task.add_done_callback(answering.discard)

        try:
            with inner._register_js_notification(knocked) as notification:
                yield notification
        finally:
            for task in list(answering):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _answer(self, inner: Any, handle: Any) -> None:
        request, *promise = inner._value_handle_to_python(handle)
        if not promise:  # the settlement's knock: nobody awaits it, so no answer to send back into V8
            self.settled.set()
            return
        (resolve,) = promise
        try:
            reply = await self(*request)
        except Exception as exc:  # the door's own fault: the code sees a failed host call, the worker lives on
            reply = _error(f"the host failed to serve the request ({exc!r})")
        resolve(reply)

    async def __call__(self, op: Any, payload: Any = None, *_: Any) -> str:
        if self.call is None:
            return _error("the host serves a call only while it runs")
        if len(str(payload)) > MAX_HOST_PAYLOAD:
            return _error(f"{op}: the request is larger than {MAX_HOST_PAYLOAD} bytes")
        try:
            request = json.loads(str(payload)) if payload is not None else {}
            match op:
                case "fetch":
                    return await self._fetch(self.call, request)
                case "digest":
                    data = base64.b64decode(request["data"])
                    return _value(hashlib.new(_hash(request["hash"]), data).digest())
                case "hmac":
                    key, data = base64.b64decode(request["key"]), base64.b64decode(request["data"])
                    return _value(hmac.new(key, data, _hash(request["hash"])).digest())
                case _:
                    return _error(f"unknown host operation '{op}'")
        except (KeyError, ValueError, TypeError) as exc:
            return _error(f"{op}: malformed request ({exc})")

    async def _fetch(self, call: _Call, request: dict[str, Any]) -> str:
        call.fetches += 1
        if call.fetches > MAX_FETCHES:
            message = f"fetch refused: at most {MAX_FETCHES} fetches per call"
            call.outcome.guard_blocks.append((FETCH_LIMIT, message))
            return _error(message)
        remaining = call.deadline - time.monotonic()
        policy = NetPolicy(
            mode=NetworkMode(call.job.network_mode),
            hosts_allow=call.job.hosts_allow,
            max_redirects=call.job.max_redirects,
            max_body=call.job.max_body,
            timeout=max(0.1, min(30.0, remaining)),
        )
        body = base64.b64decode(request["body"]) if request.get("body") else None
        headers = {str(key): str(value) for key, value in dict(request.get("headers") or {}).items()}
        try:
            response = await guarded_fetch(
                str(request["url"]),
                policy=policy,
                method=str(request.get("method", "GET")),
                headers=headers,
                body=body,
                secrets=call.job.secrets,
            )
        except GuardBlocked as exc:
            call.outcome.guard_blocks.append((str(exc.reason), str(exc)))
            return _error(f"fetch refused: {exc}")
        return json.dumps(
            {
                "status": response.status,
                "url": response.url,
                "redirected": response.url != request["url"],
                "headers": sorted(response.headers.items()),
                "body": base64.b64encode(response.body).decode("ascii"),
            }
        )


def _hash(name: str) -> str:
    names = {"SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}
    if name not in names:
        raise ValueError(f"unsupported hash {name}")
    return names[name]


def _value(digest: bytes) -> str:
    return json.dumps({"value": base64.b64encode(digest).decode("ascii")})


def _error(message: str) -> str:
    return json.dumps({"error": message})


def invocation(job: Job) -> str:
    """The script that starts the call: the globals (static values win over arguments), the code, the console cap."""
    bindings = json.dumps({**job.arguments, **job.statics})
    return f"__saipRun({json.dumps(bindings)}, {json.dumps(job.code)}, {int(job.console_cap)})"


class Isolate:
    """A V8 isolate with the runtime evaluated, for exactly one call; `close` discards it."""

    def __init__(self, stack: contextlib.AsyncExitStack, context: Any, door: _Door, *, warm: bool) -> None:
        self._stack = stack
        self._context = context
        self._door = door
        self.warm = warm
        self.used = False
        # Set when a stopped run left the isolate unable to answer: V8 is stuck in it, and only the end of the
        # process frees it.
        self.wedged = False

    @classmethod
    async def prepare(cls, memory_bytes: int, *, pause: Pause = _no_pause, warm: bool = True) -> Isolate:
        """Make an isolate ready for a call, awaiting `pause` between the steps. V8 does the work on threads of its
        own (the isolate is made on a worker thread, the runtime evaluated on the isolate's), so a call that
        arrives meanwhile is not held up by it."""
        maker = mini_racer(asyncio.get_running_loop())
        stack = contextlib.AsyncExitStack()
        door = _Door()
        # Made on the loop's thread, which it holds for about 3 ms: made on a thread of its own, the contexts
        # crashed the worker (SIGSEGV) within a few calls of the pool's tests.
        context = stack.enter_context(maker)
        try:
            context.set_hard_memory_limit(memory_bytes)
            await pause()
            host = await stack.enter_async_context(door.wired(context))
            setup: Any = await context.eval_cancelable(RUNTIME)
            await pause()
            await setup.cancelable()(host, os.urandom(RANDOM_BYTES).hex())
        except BaseException:
            await stack.aclose()
            raise
        return cls(stack, context, door, warm=warm)

    async def run(self, job: Job) -> Outcome:
        """Run the job; never raises for what the code does. The isolate is spent afterwards, whatever happened."""
        if self.used:
            raise RuntimeError("an isolate serves one call; prepare another")
        self.used = True
        outcome = Outcome(ok=False, warm=self.warm)
        started = time.monotonic()
        self._door.call = _Call(job, outcome, started + job.timeout)
        self._context.set_hard_memory_limit(job.memory_bytes)
        report: _Report | None = None
        try:
            async with asyncio.timeout(job.timeout):  # in this task: no task of its own to schedule per call
                report = await self._call(job)
        except TimeoutError:
            message = f"The code ran longer than the {job.timeout:g} s wall-clock limit and was stopped."
            _refuse(outcome, TIME_LIMIT, message)
        except JSOOMException:
            _refuse(outcome, MEMORY_LIMIT, _over_memory(job))
        except (JSPromiseError, JSEvalException) as exc:
            if self._context.was_hard_memory_limit_reached():
                _refuse(outcome, MEMORY_LIMIT, _over_memory(job))
            else:
                outcome.error = _first_line(str(exc))
        else:
            _settle(outcome, report, job)
        if report is None:
            report = await self._last_report()
        if report is not None:
            outcome.console = report.logs
            outcome.console_dropped = report.dropped
        self._door.call = None
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome

    async def _call(self, job: Job) -> _Report:
        await self._context.eval_cancelable(invocation(job))
        while True:
            report = await self._report()
            if report.state != "running":
                return report
            await self._door.settled.wait()

    async def _report(self) -> _Report:
        return _Report.parse(await self._context.eval_cancelable("__saipReport()"))

    async def _last_report(self) -> _Report | None:
        """The console of a stopped run, when the isolate can still answer."""
        try:
            return await asyncio.wait_for(self._report(), timeout=REPORT_WITHIN)
        except TimeoutError:
            self.wedged = True
        except (JSPromiseError, JSEvalException):
            pass
        return None

    async def close(self) -> None:
        if not self.wedged:
            await self._stack.aclose()


def _settle(outcome: Outcome, report: _Report, job: Job) -> None:
    if report.state != "done":
        outcome.error = report.error[:MAX_ERROR_CHARS]
        if ARRAY_BUFFER_FAILED in outcome.error:
            outcome.guard_blocks.append(
                (
                    MEMORY_LIMIT,
                    "The code asked for more memory than the sandbox allows (an array buffer could not be allocated).",
                )
            )
    elif len(report.value) > job.max_result_chars:
        _refuse(outcome, RESULT_TOO_LARGE, f"The result is larger than {job.max_result_chars} characters; return less.")
    else:
        outcome.ok = True
        outcome.result_json = report.value


def _refuse(outcome: Outcome, reason: str, message: str) -> None:
    outcome.error = message
    outcome.guard_blocks.append((reason, message))


def _over_memory(job: Job) -> str:
    return f"The code used more than the {job.memory_bytes // (1024 * 1024)} MiB memory cap and was stopped."


def _first_line(text: str) -> str:
    """A JS error's first line (name and message), without mini-racer's prefixes or the runtime's frames."""
    text = text.strip()
    for prefix in ("JavaScript rejected promise with reason: ", "Uncaught "):
        text = text.removeprefix(prefix)
    return (text.splitlines()[0] if text else "The code failed without saying why.")[:MAX_ERROR_CHARS]


def run_job(job: Job) -> Outcome:
    """One job on a fresh isolate in this process, cold (what a worker does, without the pool around it)."""

    async def once() -> Outcome:
        isolate = await Isolate.prepare(job.memory_bytes, warm=False)
        try:
            return await isolate.run(job)
        finally:
            await isolate.close()

    return asyncio.run(once())
