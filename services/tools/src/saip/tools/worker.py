"""What runs inside a sandbox worker process: one tool call in a fresh V8 context, under its limits.

The worker process holds no state between calls: each call gets a new context, the runtime of `js/runtime.js`, the
call's arguments and static values as globals, and the code compiled as the body of an async function. The only
way out of V8 is the host function, which serves fetch (through the network guard, under the tool's own policy),
digests and HMAC. Every refusal is returned with its reason, so the service raises the risk events; the worker
itself talks to nothing but the network the policy allows.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import resource
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from py_mini_racer import JSEvalException, JSOOMException, JSPromiseError, mini_racer

from saip.common.netguard import GuardBlocked, NetPolicy, NetworkMode, guarded_fetch

RUNTIME = resources.files("saip.tools").joinpath("js/runtime.js").read_text(encoding="utf-8")
RANDOM_BYTES = 4096
MAX_FETCHES = 50
MAX_HOST_PAYLOAD = 16 * 1024 * 1024

# Bounded labels of what the sandbox itself refused (the network guard's reasons come from saip.common.netguard).
TIME_LIMIT = "time-limit"
MEMORY_LIMIT = "memory-limit"
FETCH_LIMIT = "fetch-limit"
RESULT_TOO_LARGE = "result-too-large"
ARRAY_BUFFER_FAILED = "Array buffer allocation failed"


@dataclass(frozen=True)
class Job:
    """One call: the code, its globals, and the limits it runs under. Crosses the process boundary (pickled)."""

    code: str
    arguments: dict[str, Any]
    statics: dict[str, str]
    network_mode: str = "blocked"
    hosts_allow: tuple[str, ...] = ()
    timeout: float = 30.0
    memory_bytes: int = 64 * 1024 * 1024
    console_cap: int = 1000
    max_result_chars: int = 1_000_000
    max_body: int = 10 * 1024 * 1024
    max_redirects: int = 5


@dataclass
class Outcome:
    """What came of it: the result as JSON text, or the error; the console; what the guards refused."""

    ok: bool
    result_json: str = ""
    error: str = ""
    console: list[str] = field(default_factory=list)
    console_dropped: int = 0
    guard_blocks: list[tuple[str, str]] = field(default_factory=list)
    duration_ms: int = 0


def init_worker(data_limit: int) -> None:
    """Runs once in each worker process: cap its data segment, the backstop for memory V8's heap cap does not see
    (array buffers live outside the heap). An allocation past it fails inside JS as a RangeError."""
    if data_limit > 0:
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))


def run_job(job: Job) -> Outcome:
    """The worker's entry point (the pool calls it in a worker process)."""
    return asyncio.run(_run(job))


class _Host:
    """The one door out of V8: fetch under the policy, digests, HMAC."""

    def __init__(self, job: Job, outcome: Outcome, deadline: float) -> None:
        self._job = job
        self._outcome = outcome
        self._deadline = deadline
        self._fetches = 0

    async def __call__(self, op: Any, payload: Any = None, *_: Any) -> str:
        if len(str(payload)) > MAX_HOST_PAYLOAD:
            return _error(f"{op}: the request is larger than {MAX_HOST_PAYLOAD} bytes")
        try:
            request = json.loads(str(payload)) if payload is not None else {}
            match op:
                case "fetch":
                    return await self._fetch(request)
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

    async def _fetch(self, request: dict[str, Any]) -> str:
        self._fetches += 1
        if self._fetches > MAX_FETCHES:
            message = f"fetch refused: at most {MAX_FETCHES} fetches per call"
            self._outcome.guard_blocks.append((FETCH_LIMIT, message))
            return _error(message)
        remaining = self._deadline - time.monotonic()
        policy = NetPolicy(
            mode=NetworkMode(self._job.network_mode),
            hosts_allow=self._job.hosts_allow,
            max_redirects=self._job.max_redirects,
            max_body=self._job.max_body,
            timeout=max(0.1, min(30.0, remaining)),
        )
        body = base64.b64decode(request["body"]) if request.get("body") else None
        headers = {str(key): str(value) for key, value in dict(request.get("headers") or {}).items()}
        try:
            response = await guarded_fetch(
                str(request["url"]), policy=policy, method=str(request.get("method", "GET")), headers=headers, body=body
            )
        except GuardBlocked as exc:
            self._outcome.guard_blocks.append((str(exc.reason), str(exc)))
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


def program(job: Job) -> str:
    """Bind the globals (static values win over arguments), then run the code as an async function body."""
    bindings = {**job.arguments, **job.statics}
    return (
        "(function () {\n"
        f"  const bindings = {json.dumps(bindings)};\n"
        "  for (const [name, value] of Object.entries(bindings)) globalThis[name] = value;\n"
        "  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;\n"
        "  let body;\n"
        f"  try {{ body = new AsyncFunction({json.dumps(job.code)}); }}\n"
        "  catch (error) {\n"
        "    return Promise.reject(new Error(`The code does not parse: ${error.name}: ${error.message}`));\n"
        "  }\n"
        "  return body().then((value) => {\n"
        "    if (value === undefined) throw new Error('The code returned undefined: end it with `return <value>`.');\n"
        "    let text;\n"
        "    try { text = JSON.stringify(value); }\n"
        "    catch (error) {\n"
        "      const why = error.message.split('\\n')[0];\n"
        "      throw new Error(`The return value is not JSON (${why}); return plain data.`);\n"
        "    }\n"
        "    if (text === undefined) {\n"
        "      throw new Error(`The return value (a ${typeof value}) is not JSON; return plain data.`);\n"
        "    }\n"
        "    return text;\n"
        "  });\n"
        "})()"
    )


async def _run(job: Job) -> Outcome:
    outcome = Outcome(ok=False)
    started = time.monotonic()
    deadline = started + job.timeout
    loop = asyncio.get_running_loop()
    with mini_racer(loop) as context:
        context.set_hard_memory_limit(job.memory_bytes)
        host = _Host(job, outcome, deadline)
        async with context.wrap_py_function(host) as door:
            setup: Any = context.eval(RUNTIME)
            setup(door, os.urandom(RANDOM_BYTES).hex(), job.console_cap)
            try:
                text = await asyncio.wait_for(_evaluate(context, program(job)), timeout=job.timeout)
            except TimeoutError:
                message = f"The code ran longer than the {job.timeout:g} s wall-clock limit and was stopped."
                outcome.error = message
                outcome.guard_blocks.append((TIME_LIMIT, message))
            except JSOOMException:
                message = f"The code used more than the {_mib(job.memory_bytes)} MiB memory cap and was stopped."
                outcome.error = message
                outcome.guard_blocks.append((MEMORY_LIMIT, message))
            except (JSPromiseError, JSEvalException) as exc:
                if context.was_hard_memory_limit_reached():
                    message = f"The code used more than the {_mib(job.memory_bytes)} MiB memory cap and was stopped."
                    outcome.error = message
                    outcome.guard_blocks.append((MEMORY_LIMIT, message))
                else:
                    outcome.error = _js_error(exc)
                    if ARRAY_BUFFER_FAILED in outcome.error:
                        message = (
                            "The code asked for more memory than the sandbox allows (an array buffer could not be "
                            "allocated)."
                        )
                        outcome.guard_blocks.append((MEMORY_LIMIT, message))
            else:
                if len(text) > job.max_result_chars:
                    message = f"The result is larger than {job.max_result_chars} characters; return less."
                    outcome.error = message
                    outcome.guard_blocks.append((RESULT_TOO_LARGE, message))
                else:
                    outcome.ok = True
                    outcome.result_json = text
            _read_console(context, outcome)
    outcome.duration_ms = int((time.monotonic() - started) * 1000)
    return outcome


async def _evaluate(context: Any, code: str) -> str:
    promise = await context.eval_cancelable(code)
    return str(await promise)


def _read_console(context: Any, outcome: Outcome) -> None:
    """The captured console, when the context can still answer (a stopped run may leave it unusable)."""
    try:
        captured = json.loads(str(context.eval("__saipConsole()")))
    except (JSEvalException, ValueError, TypeError):
        return
    outcome.console = [str(line) for line in captured.get("logs", [])]
    outcome.console_dropped = int(captured.get("dropped", 0))


def _mib(size: int) -> int:
    return size // (1024 * 1024)


def _js_error(exc: Exception) -> str:
    """The JS error's first line (name and message), without the runtime's own frames."""
    text = str(exc).strip()
    for prefix in ("JavaScript rejected promise with reason: ", "Uncaught "):
        text = text.removeprefix(prefix)
    first = text.splitlines()[0] if text else type(exc).__name__
    return first[:2000]
