"""The pool of worker processes: single-use isolates that no state survives, ready before calls arrive; runaways,
crashes and workers that cannot start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from saip.sandbox.errors import SandboxUnavailable
from saip.sandbox.job import Limits, Outcome
from saip.sandbox.pool import Sandbox
from tests.http_origin import QuietHandler, http_origin
from tests.waiting import eventually

SMALL = Limits(timeout=10, memory_bytes=32 * 1024 * 1024)


@asynccontextmanager
async def pool(workers: int = 1, limits: Limits = SMALL, **options: object) -> AsyncIterator[Sandbox]:
    sandbox = Sandbox(workers, limits, **options)  # type: ignore[arg-type]
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def call(sandbox: Sandbox, code: str) -> Outcome:
    return await sandbox.run(sandbox.job(code, {}, {}, network_mode="blocked", hosts_allow=()))


# Each changes something a later call would see if it ran in the same isolate: a prototype, a global, a builtin,
# one of the runtime's own classes.
MUTATIONS = [
    "Object.prototype.polluted = 'yes'",
    "Array.prototype.push = function () { return 'hijacked'; }",
    "globalThis.leftover = 42",
    "JSON.stringify = () => '\"forged\"'",
    "Math.random = () => 4",
    "String.prototype.trim = function () { return 'trimmed'; }",
    "Promise.prototype.then = function () { throw new Error('broken'); }",
    "delete globalThis.Date",
    "TextEncoder.prototype.encode = () => 'encoded'",
    "Object.freeze(Object.prototype); Object.freeze(Array.prototype)",
]
PRISTINE = (
    "const list = []; return [typeof ({}).polluted, list.push(1), typeof leftover, JSON.stringify({ a: 1 }),"
    " Math.random() < 1, ' x '.trim(), typeof Promise.resolve().then(() => 1), typeof Date,"
    " new TextEncoder().encode('a').length, Object.isFrozen(Object.prototype)]"
)
EXPECTED = ["undefined", 1, "undefined", '{"a":1}', True, "x", "object", "function", 1, False]


@pytest.mark.parametrize("spares", [0, 1, 2])
async def test_no_prototype_global_or_builtin_change_survives_into_the_next_call(spares: int) -> None:
    async with pool(spares=spares) as sandbox:  # one worker: every call runs in the same process
        for mutation in MUTATIONS:
            changed = await call(sandbox, f"{mutation}; return 'changed'")
            assert changed.ok, changed.error
            after = await call(sandbox, PRISTINE)
            assert after.ok, (mutation, after.error)
            assert json.loads(after.result_json) == EXPECTED, mutation


async def test_a_call_cannot_run_twice_in_its_isolate_nor_reach_the_next_one() -> None:
    async with pool(spares=2) as sandbox:
        again = await call(sandbox, "__saipRun('{}', 'return 1', 10); return 'ran twice'")
        assert not again.ok
        assert again.error == "Error: An isolate serves one call; this one has run already."
        assert (await call(sandbox, "return 'fresh'")).result_json == '"fresh"'


async def test_the_calls_after_warming_find_their_isolates_ready() -> None:
    async with pool(spares=2) as sandbox:
        await sandbox.warm()
        first, second = await call(sandbox, "return 1"), await call(sandbox, "return 2")
    assert first.ok and second.ok
    assert first.warm and second.warm


async def test_without_spares_each_call_makes_its_own_isolate() -> None:
    async with pool(spares=0) as sandbox:
        await sandbox.warm()
        outcome = await call(sandbox, "return 1")
    assert outcome.ok and not outcome.warm


async def test_the_pool_runs_calls_side_by_side_and_survives_a_runaway() -> None:
    async with pool(2, Limits(timeout=0.5, memory_bytes=32 * 1024 * 1024)) as sandbox:
        stopped, fine = await asyncio.gather(call(sandbox, "while (true) {}"), call(sandbox, "return [1, 2]"))
        after = await call(sandbox, "return 'still serving'")
    assert [reason for reason, _ in stopped.guard_blocks] == ["time-limit"]
    assert fine.ok and fine.result_json == "[1,2]"
    assert after.ok


async def test_a_loop_in_a_promise_job_is_stopped_at_the_wall_clock_and_its_worker_serves_on() -> None:
    # The loop runs in a promise job after the call's script returned; the interpreter's deadline reaches it there
    # too, so the worker answers and takes the next call itself.
    async with pool(1, Limits(timeout=0.5, memory_bytes=32 * 1024 * 1024)) as sandbox:
        await sandbox.warm()
        before = sandbox.pids
        stopped = await call(sandbox, "await null; while (true) {}")
        after = await call(sandbox, "return 'served by the same worker'")
        assert sandbox.pids == before
    assert [reason for reason, _ in stopped.guard_blocks] == ["time-limit"]
    assert stopped.error == "The code ran longer than the 0.5 s wall-clock limit and was stopped."
    assert after.ok


async def test_a_caught_interruption_still_ends_the_call() -> None:
    # The deadline's error cannot be caught: a catch or a finally that loops again never runs.
    async with pool(1, Limits(timeout=0.5, memory_bytes=32 * 1024 * 1024)) as sandbox:
        looping = "try { while (true) {} } catch (e) { while (true) {} } finally { while (true) {} }"
        stopped = await call(sandbox, looping)
    assert [reason for reason, _ in stopped.guard_blocks] == ["time-limit"]


async def test_recursion_and_allocation_bombs_end_the_call_not_the_worker() -> None:
    async with pool() as sandbox:
        await sandbox.warm()
        before = sandbox.pids
        recursion = await call(sandbox, "const f = () => [f()]; return f()")
        allocation = await call(sandbox, "const o = {}; for (let i = 0; ; i++) o['k' + i] = [i];")
        after = await call(sandbox, "return 'still serving'")
        assert sandbox.pids == before
    assert recursion.error == "RangeError: Maximum call stack size exceeded"
    assert [reason for reason, _ in allocation.guard_blocks] == ["memory-limit"]
    assert after.ok


async def test_a_timer_of_a_stopped_call_never_reaches_the_next_call() -> None:
    async with pool(1, Limits(timeout=0.5, memory_bytes=32 * 1024 * 1024)) as sandbox:
        stopped = await call(sandbox, "setTimeout(() => { globalThis.late = 'leaked'; }, 50); while (true) {}")
        later = await call(sandbox, "await new Promise((done) => setTimeout(done, 200)); return typeof late")
    assert [reason for reason, _ in stopped.guard_blocks] == ["time-limit"]
    assert later.result_json == '"undefined"'


async def test_array_buffers_past_the_workers_data_cap_fail_inside_the_code() -> None:
    async with pool() as sandbox:
        outcome = await call(sandbox, "return new Uint8Array(2 ** 31).fill(1).length")
        after = await call(sandbox, "return 'still serving'")
    assert not outcome.ok
    assert "RangeError" in outcome.error
    assert [reason for reason, _ in outcome.guard_blocks] == ["memory-limit"]
    assert after.ok


def reaped(pid: int) -> bool:
    """The process has ended and the pool has collected it, so its socket is closed for certain."""
    return not os.path.exists(f"/proc/{pid}")


async def test_a_worker_killed_while_idle_is_replaced_before_the_next_call() -> None:
    async with pool() as sandbox:
        await sandbox.warm()
        (pid,) = sandbox.pids
        os.kill(pid, signal.SIGKILL)
        await eventually(lambda: reaped(pid))
        outcome = await call(sandbox, "return 'fine'")
        assert pid not in sandbox.pids
    assert outcome.ok, outcome.error


class _Hold(QuietHandler):
    """Answers nothing until released: a call that fetches it is in its worker's hands until then."""

    arrived = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        type(self).arrived.set()
        type(self).release.wait(timeout=30)
        self.send_response(204)
        self.end_headers()


async def test_a_worker_killed_during_a_call_is_reported_as_a_crash_and_replaced() -> None:
    with http_origin(_Hold) as site:
        try:
            async with pool() as sandbox:
                await sandbox.warm()
                (pid,) = sandbox.pids
                code = f"await fetch('{site}/hold'); return 1"
                job = sandbox.job(code, {}, {}, network_mode="allowlist", hosts_allow=("127.0.0.1",))
                running = asyncio.ensure_future(sandbox.run(job))
                await eventually(_Hold.arrived.is_set)
                os.kill(pid, signal.SIGKILL)
                crashed = await running
                after = await call(sandbox, "return 'fine'")
        finally:
            _Hold.release.set()
    assert [reason for reason, _ in crashed.guard_blocks] == ["worker-crashed"]
    assert "exit code -9" in crashed.error
    assert after.ok


async def test_a_pool_whose_workers_cannot_start_says_so_rather_than_failing_inside() -> None:
    async with pool(command=(sys.executable, "-c", "raise SystemExit(3)")) as sandbox:
        with pytest.raises(SandboxUnavailable, match="did not start \\(exit code 3\\)"):
            await call(sandbox, "return 1")
        with pytest.raises(SandboxUnavailable):
            await sandbox.warm()


async def test_a_worker_ended_by_a_signal_before_it_was_ready_is_named_so_not_as_v8_failing() -> None:
    ends_itself = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    async with pool(command=(sys.executable, "-c", ends_itself)) as sandbox:
        with pytest.raises(SandboxUnavailable) as refused:
            await call(sandbox, "return 1")
    assert str(refused.value).startswith("A sandbox worker process was killed by SIGTERM before it was ready.")


async def test_workers_have_a_session_of_their_own_so_a_signal_to_the_services_group_is_the_services() -> None:
    async with pool(workers=2) as sandbox:
        await sandbox.warm()
        for pid in sandbox.pids:
            assert os.getsid(pid) == pid != os.getsid(0)


OWNER = """
import asyncio, sys, time
from saip.sandbox.job import Limits
from saip.sandbox.pool import Sandbox

async def main():
    sandbox = Sandbox(2, Limits(timeout=10, memory_bytes=32 * 1024 * 1024))
    await sandbox.warm()
    print(" ".join(map(str, sandbox.pids)), flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_the_workers_die_with_the_service_that_started_them_however_it_ends() -> None:
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, stdout=asyncio.subprocess.PIPE)
    assert owner.stdout is not None
    pids = [int(pid) for pid in (await asyncio.wait_for(owner.stdout.readline(), 60)).split()]
    assert len(pids) == 2 and all(not reaped(pid) for pid in pids)
    owner.kill()  # SIGKILL: the service's own cleanup never runs
    await owner.wait()
    for pid in pids:
        await eventually(lambda pid=pid: ended(pid))


def ended(pid: int) -> bool:
    """Gone, or a zombie: an orphan's exit status is for whoever adopted it (PID 1) to collect."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True
