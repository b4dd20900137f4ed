"""A published JavaScript tool through /mcp against a native Python tool on a bare MCP SDK server, and against a READ
management call (the same gateway -> tools path without the sandbox) while another process keeps one core busy; the
sandbox's own costs (a worker process's start, an isolate made on the call path against one made before the call,
the pool's round trip, the worker's CPU a call)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench import procstat
from bench.mcp_latency import CALLS, STACK_ENV, WARMUP, _measure, _wait_listening
from bench.stats import summary, table
from saip.common.natsd import free_port
from saip.sandbox.isolate import Isolate, run_job
from saip.sandbox.job import Job, Limits
from saip.sandbox.pool import Sandbox
from tests.e2e.stack import start_stack

WORD_COUNT = {
    "name": "word-count",
    "description": "Count the words of a text.",
    "params": [{"name": "text", "type": "string", "required": True, "testValue": "one two three"}],
    "code": "return { words: text.trim() ? text.trim().split(/\\s+/).length : 0 };",
}
ARGUMENTS = {"text": "the quick brown fox jumps over the lazy dog"}
STARTS = 5
CONTEXTS = 200
# The pause between two calls through the pool: about what a call through the whole stack leaves between two calls
# of one sequential client, so the worker has had the time to make its next isolate.
PACE = 0.01


def _publish(url: str, admin_token: str) -> None:
    """Draft, Local Pass and publish through the person's REST API (no approval question on that path)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=60) as api:
        api.post("/api/v1/tools", json={"spec": WORD_COUNT}).raise_for_status()
        if not api.post("/api/v1/tools/word-count/test").json()["ok"]:
            raise RuntimeError("the benchmark tool did not pass its Local Pass")
        api.post("/api/v1/tools/word-count/publish").raise_for_status()


async def _served(url: str, token: str) -> None:
    from tests.e2e.stack import mcp_client

    with anyio.fail_after(15):
        while True:
            async with mcp_client(url, token, mode="legacy") as client:
                if "word-count" in {tool.name for tool in (await client.list_tools()).tools}:
                    return
            await anyio.sleep(0.1)


# The same stack twice: with every isolate made on its call's path, then as `make run` starts it (one spare isolate
# per worker); the management calls' rate limit lifted, as in `bench mcp_latency`.
CONFIGURATIONS = (
    ("isolate made on the call path", {**STACK_ENV, "SAIP_TOOLS_SANDBOX_SPARES": "0"}),
    ("isolate made ahead (default)", STACK_ENV),
)
DEFAULT = CONFIGURATIONS[-1][0]
ERAS = (("legacy", "2025-11-25"), ("auto", "2026-07-28"))
READ = ("saip_monitor_hitl", {"recent": 1})
# Another process that keeps one of the machine's cores busy while it runs (bounded: it stops by itself).
BUSY_LOOP = "import time\nend = time.monotonic() + 300\nwhile time.monotonic() < end:\n    pass"


@contextlib.contextmanager
def _busy_core() -> Iterator[None]:
    busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        yield
    finally:
        busy.kill()
        busy.wait(timeout=10)


def _calls() -> list[list[object]]:
    port = free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.bare_server", str(port)])
    bare_url = f"http://127.0.0.1:{port}/mcp"
    figures: dict[tuple[str, str], tuple[dict[str, float], dict[str, float]]] = {}
    means: dict[tuple[str, str], list[float]] = {}
    busy: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
    try:
        _wait_listening(port)
        for label, env in CONFIGURATIONS:
            with tempfile.TemporaryDirectory() as home:
                stack = start_stack(Path(home), env=env)
                try:
                    _publish(stack.url, stack.admin_token)
                    anyio.run(_served, stack.mcp_url, stack.mcp_token)
                    for mode, era in ERAS:
                        # The baseline just before, in the same conditions: the machine may be shared.
                        base = summary(anyio.run(_measure, bare_url, None, "word_count", ARGUMENTS, mode))
                        before = _tools_time(stack.metrics["tools"])
                        js = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, "word-count", ARGUMENTS, mode))
                        after = _tools_time(stack.metrics["tools"])
                        figures[label, era] = base, js
                        means[label, era] = mean_ms(before, after)
                    if label == DEFAULT:
                        with _busy_core():
                            for mode, era in ERAS:
                                read = summary(anyio.run(_measure, stack.mcp_url, stack.mcp_token, *READ, mode))
                                js = summary(
                                    anyio.run(_measure, stack.mcp_url, stack.mcp_token, "word-count", ARGUMENTS, mode)
                                )
                                busy[era] = read, js
                finally:
                    stack.stop()
    finally:
        bare.terminate()
        bare.wait(timeout=10)
    rows: list[list[object]] = []
    for _, era in ERAS:
        for label, _ in CONFIGURATIONS:
            base, js = figures[label, era]
            rows.append([f"native Python tool, bare MCP SDK ({era}, beside the next row)", *_cells(base)])
            rows.append([f"published JS tool, {label} ({era})", *_cells(js)])
            added = [j - b for j, b in zip(_cells(js), _cells(base), strict=True)]
            rows.append([f"added by saip, {label} ({era})", *added])
            served, run = means[label, era]
            rows.append([f"of which the tools service's CallServedTool, mean ({era})", served, "", ""])
            rows.append([f"of which its sandbox run, pool round trip included, mean ({era})", run, "", ""])
    for _, era in ERAS:
        read, js = busy[era]
        rows.append([f"READ management call, a busy loop on one core ({era}, beside the next row)", *_cells(read)])
        rows.append([f"published JS tool, a busy loop on one core ({era})", *_cells(js)])
        rows.append(
            [
                f"the JS tool's time over the READ call's, a busy loop on one core ({era})",
                *(j - r for j, r in zip(_cells(js), _cells(read), strict=True)),
            ]
        )
    return rows


# What the tools service spent per call, from its own histograms (sum and count): the gRPC method and the run.
TOOLS_TIME = (
    ("saip_grpc_server_handling_seconds", {"grpc_service": "saip.v1.ToolsService", "grpc_method": "CallServedTool"}),
    ("saip_tools_sandbox_run_seconds", {"kind": "call"}),
)


def _tools_time(
    metrics_url: str, histograms: Sequence[tuple[str, dict[str, str]]] = TOOLS_TIME
) -> list[tuple[float, float]]:
    """(sum, count) of each of the histograms (TOOLS_TIME by default), in their order, scraped from the tools
    service's /metrics: every series whose labels include the given ones, added up."""
    samples = [
        sample
        for family in text_string_to_metric_families(httpx.get(metrics_url, timeout=10).text)
        for sample in family.samples
    ]
    found = []
    for name, labels in histograms:
        total = {"_sum": 0.0, "_count": 0.0}  # no sample before the first call
        for sample in samples:
            if sample.name in (f"{name}_sum", f"{name}_count") and labels.items() <= sample.labels.items():
                total[sample.name.removeprefix(name)] += sample.value
        found.append((total["_sum"], total["_count"]))
    return found


def mean_ms(before: Sequence[tuple[float, float]], after: Sequence[tuple[float, float]]) -> list[float]:
    """Milliseconds per observation of each histogram between two scrapes of `_tools_time`."""
    return [(now - was) / (then - earlier) * 1000 for (was, earlier), (now, then) in zip(before, after, strict=True)]


def _cells(figures: dict[str, float]) -> list[float]:
    return [figures["p50"], figures["p90"], figures["p99"]]


def _starts() -> list[list[object]]:
    """A worker process's start; a call on an isolate made on the call path (what every call paid before spares)
    against one made beforehand, in-process; and calls through the pool from the service's event loop."""
    job = Job(code=WORD_COUNT["code"], arguments=ARGUMENTS, statics={})

    async def cold_starts() -> list[float]:
        samples = []
        for _ in range(STARTS):
            started = time.perf_counter()
            sandbox = Sandbox(1, Limits())
            await sandbox.warm()
            samples.append((time.perf_counter() - started) * 1000)
            await sandbox.close()
        return samples

    async def ready() -> list[float]:
        samples = []
        for _ in range(CONTEXTS):
            isolate = Isolate.prepare()
            started = time.perf_counter()
            await isolate.run(job)
            samples.append((time.perf_counter() - started) * 1000)
            isolate.close()
        return samples

    worker_cpu: dict[int, float] = {}

    async def pooled(spares: int) -> list[float]:
        """Calls through the pool; the worker's CPU per call (the call, and the next isolate made) into worker_cpu."""
        sandbox = Sandbox(1, Limits(), spares=spares)
        await sandbox.warm()
        samples = []
        try:
            (worker,) = sandbox.pids
            cpu_started = procstat.cpu_seconds(worker)
            for _ in range(CONTEXTS):
                call = sandbox.job(job.code, job.arguments, {}, network_mode="blocked", hosts_allow=())
                started = time.perf_counter()
                await sandbox.run(call)
                samples.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(PACE)
            worker_cpu[spares] = (procstat.cpu_seconds(worker) - cpu_started) / CONTEXTS * 1000
        finally:
            await sandbox.close()
        return samples

    run_job(job)
    made = []
    for _ in range(CONTEXTS):
        started = time.perf_counter()
        run_job(job)
        made.append((time.perf_counter() - started) * 1000)
    rows: list[list[object]] = []
    for label, samples in (
        (f"start a worker process (spawn, imports, first isolate; {STARTS} starts)", asyncio.run(cold_starts())),
        (f"isolate made on the call path + runtime + the call, in-process ({CONTEXTS})", made),
        (f"the call on an isolate made beforehand, in-process ({CONTEXTS})", asyncio.run(ready())),
        (f"through the pool without spares, from the service's loop ({CONTEXTS})", asyncio.run(pooled(0))),
        (f"through the pool with one spare, from the service's loop ({CONTEXTS})", asyncio.run(pooled(1))),
    ):
        figures = summary(samples)
        rows.append([label, figures["p50"], figures["p90"], figures["p99"]])
    for spares, spent in sorted(worker_cpu.items()):
        rows.append([f"the worker's CPU per call through the pool, {spares} spare(s), mean", spent, "", ""])
    return rows


def run() -> str:
    calls = table(
        f"Tool call latency over streamable HTTP, {CALLS} sequential calls after {WARMUP} warm-up (ms)",
        ["", "p50", "p90", "p99"],
        _calls(),
    )
    starts = table(
        f"Sandbox costs, calls {PACE * 1000:g} ms apart through the pool (ms)", ["", "p50", "p90", "p99"], _starts()
    )
    return calls + "\n\n" + starts
