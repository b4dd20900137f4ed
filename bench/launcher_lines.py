"""What `saip run`'s output costs a READ management call: each process's CPU a call, with the p50, for this tree's stack
and, given `base` (a checkout of the code before, whose libs/cli/src goes first on PYTHONPATH), for that one beside it.

The audit service writes a log line for every record it chains, one a READ call; under `saip run` that line reaches
the launcher's output through honcho (its worker for the audit service, the queue, the launcher) or, since the forked
services write their own lines, straight from the service. Both stacks run at once, and their rounds of calls
alternate, so that both see the same load.

A side-by-side run: `git archive main | tar -x -C /tmp/base`, then
`python -c "from bench import launcher_lines; print(launcher_lines.run('/tmp/base'))"`.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from bench.mcp_latency import STACK_ENV
from bench.procstat import cpu_seconds
from bench.stats import percentile, table
from tests.e2e.stack import Stack, mcp_client, process_name, start_stack

WARMUP = 20
ROUNDS = 8
CALLS = 50  # a round, on each stack in turn
ARGUMENTS = {"recent": 1}
GROUPS = ("launcher", "honcho workers", "audit", "gateway", "nats-server")


def groups(stack: Stack) -> dict[str, list[int]]:
    """The stack's processes by what `GROUPS` calls them: honcho's workers are the launcher's forks (its command
    line)."""
    launcher = stack.process.pid
    command = Path(f"/proc/{launcher}/cmdline").read_bytes()
    found: dict[str, list[int]] = {name: [] for name in GROUPS}
    found["launcher"].append(launcher)
    for pid in stack.descendants():
        try:
            same = Path(f"/proc/{pid}/cmdline").read_bytes() == command
        except OSError:
            continue
        name = "honcho workers" if same else process_name(pid)
        if name in found:
            found[name].append(pid)
    return found


def spent(pids: dict[str, list[int]]) -> dict[str, float]:
    return {name: sum(cpu_seconds(pid) for pid in group) for name, group in pids.items()}


async def _measure(stacks: dict[str, Stack]) -> dict[str, tuple[dict[str, float], list[float]]]:
    cpu = {label: dict.fromkeys((*GROUPS, "the client"), 0.0) for label in stacks}
    samples: dict[str, list[float]] = {label: [] for label in stacks}
    async with AsyncExitStack() as opened:
        clients = {
            label: await opened.enter_async_context(mcp_client(stack.mcp_url, stack.mcp_token))
            for label, stack in stacks.items()
        }
        pids = {label: groups(stack) for label, stack in stacks.items()}
        for client in clients.values():
            for _ in range(WARMUP):
                await client.call_tool("saip_monitor_hitl", ARGUMENTS)
        for _ in range(ROUNDS):
            for label, client in clients.items():
                before, client_before = spent(pids[label]), time.process_time()
                for _ in range(CALLS):
                    started = time.perf_counter()
                    result = await client.call_tool("saip_monitor_hitl", ARGUMENTS)
                    samples[label].append((time.perf_counter() - started) * 1000)
                    if result.is_error:
                        raise RuntimeError(f"saip_monitor_hitl failed during the benchmark: {result.content}")
                after = spent(pids[label])
                for name in GROUPS:
                    cpu[label][name] += after[name] - before[name]
                cpu[label]["the client"] += time.process_time() - client_before
    calls = ROUNDS * CALLS
    return {
        label: ({name: 1000 * total / calls for name, total in cpu[label].items()}, samples[label]) for label in stacks
    }


def run(base: str | None = None) -> str:
    with tempfile.TemporaryDirectory() as home:
        stacks: dict[str, Stack] = {}
        try:
            if base is not None:
                path = os.pathsep.join([str(Path(base, "libs", "cli", "src")), os.environ.get("PYTHONPATH", "")])
                stacks["before"] = start_stack(Path(home, "before"), env={**STACK_ENV, "PYTHONPATH": path})
            stacks["now"] = start_stack(Path(home, "now"), env=STACK_ENV)
            measured = anyio.run(_measure, stacks)
        finally:
            for stack in stacks.values():
                stack.stop()
    rows = []
    for label, (cpu, samples) in measured.items():
        relay = cpu["launcher"] + cpu["honcho workers"]
        rows.append([label, *(cpu[name] for name in (*GROUPS, "the client")), relay, percentile(samples, 50)])
    return table(
        f"ms of CPU a READ call (saip_monitor_hitl, {ROUNDS} alternating rounds of {CALLS} after {WARMUP} warm-up), "
        "and the call's p50 in ms",
        ["", *GROUPS, "the client", "launcher + workers", "p50"],
        rows,
    )
