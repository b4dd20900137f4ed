"""Load: concurrent clients of both eras against the stack and against a bare MCP SDK server, same mix, same run;
then 1,000 idle 2025-11-25 sessions held open on the gateway and a token change reaching them all. Each process's
memory is read before the load, after it, and after the same load a second time on the same stack (the first fills
the bounded stores that start empty; a leak shows in the second's growth).

The mix, per client, alternates a READ management call (`saip_monitor_hitl`, gate + audit ack + gRPC) and a call of
a published JavaScript tool (`word-count`, the sandbox); the bare server answers the same two shapes natively
(`status`, `word_count`). Half the clients speak 2025-11-25, half 2026-07-28. Each client makes its next call when
the last one answered (a closed loop), so calls/s is what the server sustains, not what the load tool offers.

The load tool is bounded by construction: loopback only (the URLs come from the processes it started), a fixed
number of clients, and a deadline after which every client stops by itself. `SAIP_BENCH_LOAD_SECONDS` and
`SAIP_BENCH_LOAD_CLIENTS` shorten a trial run; the figures in docs/BENCHMARKS.md use the defaults.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
from mcp import types

from bench import procstat
from bench.mcp_latency import STACK_ENV, _wait_listening
from bench.stats import summary, table
from bench.tool_latency import ARGUMENTS, _publish, _served
from saip.common.natsd import free_port
from tests.e2e.stack import Stack, mcp_client, process_name, start_stack

SECONDS = float(os.environ.get("SAIP_BENCH_LOAD_SECONDS", "60"))
CLIENTS = int(os.environ.get("SAIP_BENCH_LOAD_CLIENTS", "32"))
IDLE_SESSIONS = int(os.environ.get("SAIP_BENCH_IDLE_SESSIONS", "1000"))
# After the tools' list_changed reached every idle session, the sessions close once no other list_changed (resources,
# prompts) has arrived at any of them for this long.
QUIET_SECONDS = 1.0
LIST_CHANGED = (
    types.ToolListChangedNotification,
    types.ResourceListChangedNotification,
    types.PromptListChangedNotification,
)
ERAS = ("legacy", "auto")
LOAD_TOOL = "the load tool"
BARE = "bare server"


@dataclass
class Tally:
    """What the clients of one target saw: latencies in ms, and the errors by their first words."""

    samples: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, text: str) -> None:
        key = text[:80]
        self.errors[key] = self.errors.get(key, 0) + 1


Call = tuple[str, dict[str, Any]]


async def _client(url: str, token: str | None, mode: str, mix: tuple[Call, Call], until: float, tally: Tally) -> None:
    async with mcp_client(url, token, mode=mode) as client:
        n = 0
        while time.monotonic() < until:
            tool, arguments = mix[n % 2]
            n += 1
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, arguments)
            except Exception as error:  # a load tool counts every failure, whatever its kind
                tally.error(f"{type(error).__name__}: {error}")
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                tally.error(str(result.content[0].text if result.content else result))  # type: ignore[union-attr]
            else:
                tally.samples.append(elapsed)


async def _load(url: str, token: str | None, mix: tuple[Call, Call]) -> tuple[Tally, float]:
    tally = Tally()
    started = time.monotonic()
    until = started + SECONDS
    async with anyio.create_task_group() as group:
        for n in range(CLIENTS):
            group.start_soon(_client, url, token, ERAS[n % 2], mix, until, tally)
    return tally, time.monotonic() - started


def _processes(stack: Stack) -> dict[str, int]:
    """The stack's Python services and nats-server by name, from /proc."""
    named: dict[str, int] = {}
    for pid in stack.descendants():
        name = process_name(pid)
        if name is not None:
            # Several processes of one kind (the sandbox's workers) are numbered.
            named[name if name not in named else f"{name} {sum(key.startswith(name) for key in named) + 1}"] = pid
    return named


def _memory(pids: dict[str, int]) -> dict[str, float]:
    return {name: procstat.rss(pid) for name, pid in sorted(pids.items())}


async def _audit_lag(api: httpx.AsyncClient) -> tuple[int, float]:
    """Records not yet chained when the load stopped, and the seconds until the chain had them all."""
    started = time.monotonic()
    first = None
    with anyio.fail_after(120):
        while True:
            pending = (await api.get("/api/v1/audit/overview")).json()["data"]["audit"]["pendingRecords"]
            first = pending if first is None else first
            if pending == 0:
                return first, time.monotonic() - started
            await anyio.sleep(0.05)


async def _idle_sessions(stack: Stack, gateway: int) -> list[list[object]]:
    """Open IDLE_SESSIONS 2025-11-25 sessions, measure the gateway's memory per session, then change the MCP token
    through the REST API and time until every session has its tools/list_changed.

    The change is the token's removal: a rotation to a new token leaves the surface as it was (nothing to tell the
    sessions, whose next request with the old token is refused), while a removal takes the management tools off
    every session, so each one is told."""
    reached = anyio.Event()
    counted = {"changed": 0, "armed": False}
    told = {"again": anyio.Event()}

    async def on_message(message: object) -> None:
        if isinstance(message, LIST_CHANGED):
            told["again"].set()
        if counted["armed"] and isinstance(message, types.ToolListChangedNotification):
            counted["changed"] += 1
            if counted["changed"] == IDLE_SESSIONS:
                reached.set()

    before = procstat.rss(gateway)
    opened = anyio.Event()
    holding = {"open": 0}

    async def hold(done: anyio.Event) -> None:
        async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy", message_handler=on_message):
            holding["open"] += 1
            if holding["open"] == IDLE_SESSIONS:
                opened.set()
            await done.wait()

    done = anyio.Event()
    started = time.monotonic()
    admin = {"Authorization": f"Bearer {stack.admin_token}"}
    async with anyio.create_task_group() as group, httpx.AsyncClient(base_url=stack.url, headers=admin) as api:
        for _ in range(IDLE_SESSIONS):
            group.start_soon(hold, done)
            await anyio.lowlevel.checkpoint()
        with anyio.fail_after(300):
            await opened.wait()
        open_seconds = time.monotonic() - started
        await anyio.sleep(2)
        after = procstat.rss(gateway)
        counted["armed"] = True
        rotated = time.perf_counter()
        (await api.delete("/api/v1/mcp-token", timeout=30)).raise_for_status()
        answered = (time.perf_counter() - rotated) * 1000
        with anyio.fail_after(120):
            await reached.wait()
        all_reached = (time.perf_counter() - rotated) * 1000
        # The gateway tells the resources' and prompts' list_changed after the tools' one: closing the sessions while
        # it does would have the clients fail to read what is still on its way (the SDK's "Error parsing SSE
        # message"), so they close once nothing more has arrived for a while.
        with anyio.fail_after(60):
            while True:
                told["again"] = anyio.Event()
                with anyio.move_on_after(QUIET_SECONDS) as quiet:
                    await told["again"].wait()
                if quiet.cancelled_caught:
                    break
        done.set()
    return [
        [f"{IDLE_SESSIONS} idle 2025-11-25 sessions opened (s)", round(open_seconds, 2)],
        ["gateway memory before (MiB)", round(before, 1)],
        [f"gateway memory with {IDLE_SESSIONS} sessions (MiB)", round(after, 1)],
        ["gateway memory per session (KiB)", round((after - before) * 1024 / IDLE_SESSIONS, 1)],
        ["MCP token removed: REST answer (ms)", round(answered, 1)],
        [f"MCP token removed: list_changed at all {IDLE_SESSIONS} sessions (ms)", round(all_reached, 1)],
    ]


def _growth(start: float, end: float) -> str:
    return f"{(end - start) / max(start, 0.1):+.0%}"


def _rate(tally: Tally, seconds: float) -> float:
    return len(tally.samples) / seconds


def _row(target: str, tally: Tally, seconds: float) -> list[object]:
    figures = summary(tally.samples) if tally.samples else {"p50": 0.0, "p99": 0.0}
    return [target, round(_rate(tally, seconds), 1), figures["p50"], figures["p99"], sum(tally.errors.values())]


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    """Seconds of CPU each process has spent so far, and this one's (the load's clients) as `the load tool`."""
    return {LOAD_TOOL: time.process_time(), **{name: procstat.cpu_seconds(pid) for name, pid in pids.items()}}


def _spent(before: dict[str, float], after: dict[str, float], calls: int) -> dict[str, float]:
    """Milliseconds of CPU per call of each process between two `_cpu` readings."""
    return {name: (after[name] - before[name]) * 1000 / max(calls, 1) for name in before}


def _budget(bare: dict[str, float], saip: dict[str, float], bare_rate: float) -> str:
    """The CPU a call cost each side under load, and what the stack may spend a call for half the bare server's
    calls/s on this machine's cores, with the load tool costing what it cost here."""
    stack = sum(ms for name, ms in saip.items() if name != LOAD_TOOL)
    allowed = procstat.CORES * 1000 / (bare_rate / 2) - saip[LOAD_TOOL]
    rows: list[list[object]] = [
        ["bare MCP SDK server", bare[BARE], bare[LOAD_TOOL], bare[BARE] + bare[LOAD_TOOL]],
        ["saip, every process of the stack", stack, saip[LOAD_TOOL], stack + saip[LOAD_TOOL]],
        *([f"  {name}", ms, "", ""] for name, ms in sorted(saip.items()) if name != LOAD_TOOL and ms >= 0.05),
        [f"saip at 50 % of the bare server's calls/s, on {procstat.CORES} cores: at most", allowed, "", ""],
    ]
    columns = ["ms of CPU a call", "the server side", "the load tool", "both"]
    return table("CPU a call cost under load (the server side's processes, and the load tool's clients)", columns, rows)


def _under_load(stack: Stack, bare_url: str, bare_pid: int) -> str:
    pids = _processes(stack)
    started = _cpu({BARE: bare_pid})
    bare, bare_seconds = anyio.run(_load, bare_url, None, (("status", {}), ("word_count", ARGUMENTS)))
    bare_cpu = _spent(started, _cpu({BARE: bare_pid}), len(bare.samples))
    mix = (("saip_monitor_hitl", {"recent": 1}), ("word-count", ARGUMENTS))
    before = _memory(pids)
    started = _cpu(pids)
    saip, saip_seconds = anyio.run(_load, stack.mcp_url, stack.mcp_token, mix)
    saip_cpu = _spent(started, _cpu(pids), len(saip.samples))
    after = _memory(pids)
    # The same load again on the same stack: the first fills the bounded stores that start empty (the audit service's
    # recent traces and views, docs/audit.md "Memory"), so the growth over the second is what tells a leak.
    anyio.run(_load, stack.mcp_url, stack.mcp_token, mix)
    again = _memory(pids)

    async def lag() -> tuple[int, float]:
        admin = {"Authorization": f"Bearer {stack.admin_token}"}
        async with httpx.AsyncClient(base_url=stack.url, headers=admin, timeout=10) as api:
            return await _audit_lag(api)

    pending, catch_up = anyio.run(lag)
    share = _rate(saip, saip_seconds) / max(_rate(bare, bare_seconds), 0.1)
    rows: list[list[object]] = [
        _row("bare MCP SDK server (baseline)", bare, bare_seconds),
        _row("saip", saip, saip_seconds),
        ["saip / bare", f"{share:.0%}", "", "", ""],
    ]
    header = f"{CLIENTS} clients (half per era), {SECONDS:.0f} s, READ management call and published tool, closed loop"
    parts = [table(header, ["", "calls/s", "p50 ms", "p99 ms", "errors"], rows)]
    for name, errors in (("bare", bare.errors), ("saip", saip.errors)):
        parts += [f"  {name} error: {count} x {text}" for text, count in errors.items()]
    parts.append(f"audit lag at the end: {pending} records not yet chained, all chained {catch_up:.2f} s later")
    memory: list[list[object]] = [
        [
            name,
            before[name],
            after[name],
            again[name],
            _growth(before[name], after[name]),
            _growth(after[name], again[name]),
        ]
        for name in before
    ]
    columns = ["", "before", "after", "after a 2nd load", "growth", "growth over the 2nd"]
    parts.append(table("memory of each process (MiB)", columns, memory))
    parts.append(_budget(bare_cpu, saip_cpu, _rate(bare, bare_seconds)))
    return "\n".join(parts)


def _sessions(stack: Stack) -> str:
    gateway = _processes(stack)["gateway"]
    return table(f"{IDLE_SESSIONS} idle sessions", ["", "figure"], anyio.run(_idle_sessions, stack, gateway))


def _with_stack(*steps: Callable[[Stack, str, int], str]) -> list[str]:
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.bare_server", str(port)])
    try:
        _wait_listening(port)
        with tempfile.TemporaryDirectory() as home:
            stack = start_stack(Path(home), env=STACK_ENV)
            try:
                _publish(stack.url, stack.admin_token)
                anyio.run(_served, stack.mcp_url, stack.mcp_token)
                return [step(stack, f"http://127.0.0.1:{port}/mcp", bare.pid) for step in steps]
            finally:
                stack.stop()
    finally:
        bare.terminate()
        bare.wait(timeout=10)


def run() -> str:
    return "\n\n".join(_with_stack(_under_load, lambda stack, _url, _pid: _sessions(stack)))
