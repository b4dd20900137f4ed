"""What tracing costs: a READ management call and a published tool call through /mcp on a stack with tracing on (the
default: spans made and exported over NATS) against the same stack with `tracing.enabled: false`, both stacks up at
once and called in alternating rounds, so a change in the machine's load falls on both; and what one span costs
in-process (the SDK's span, and its place in the batch processor's queue), against a no-op span."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracer, Tracer

from bench.mcp_latency import STACK_ENV
from bench.stats import added, row, summary, table
from bench.tool_latency import ARGUMENTS, _publish, _served
from tests.e2e.stack import Stack, mcp_client, start_stack

ROUNDS = 6
CALLS = 50  # per round and stack: ROUNDS * CALLS calls of each tool on each stack, in each era
WARMUP = 30
SPANS = 20_000
CONFIGURATIONS = (("tracing on (default)", {}), ("tracing off", {"SAIP_TRACING_ENABLED": "false"}))
TOOLS = (
    ("READ management call (saip_monitor_hitl)", "saip_monitor_hitl", {"recent": 1}),
    ("published JS tool (word-count)", "word-count", ARGUMENTS),
)
ERAS = (("legacy", "2025-11-25"), ("auto", "2026-07-28"))


async def _rounds(stacks: Sequence[Stack], tool: str, arguments: dict[str, object], mode: str) -> list[list[float]]:
    """ROUNDS rounds of CALLS calls on each stack in turn (after a warm-up on each); the samples of each stack."""
    samples: list[list[float]] = [[] for _ in stacks]
    async with (
        mcp_client(stacks[0].mcp_url, stacks[0].mcp_token, mode=mode) as on,
        mcp_client(stacks[1].mcp_url, stacks[1].mcp_token, mode=mode) as off,
    ):
        clients = (on, off)
        for client in clients:
            for _ in range(WARMUP):
                await client.call_tool(tool, arguments)
        for _ in range(ROUNDS):
            for index, client in enumerate(clients):
                for _ in range(CALLS):
                    started = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    samples[index].append((time.perf_counter() - started) * 1000)
                    if result.is_error:
                        raise RuntimeError(f"{tool} failed during the benchmark: {result.content}")
    return samples


def _calls() -> list[list[object]]:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as on_home, tempfile.TemporaryDirectory() as off_home:
        stacks: list[Stack] = []
        try:
            for (_, env), home in zip(CONFIGURATIONS, (on_home, off_home), strict=True):
                stacks.append(start_stack(Path(home), env={**STACK_ENV, **env}))
            for stack in stacks:
                _publish(stack.url, stack.admin_token)
                anyio.run(_served, stack.mcp_url, stack.mcp_token)
            for mode, era in ERAS:
                for label, tool, arguments in TOOLS:
                    on, off = (summary(samples) for samples in anyio.run(_rounds, stacks, tool, arguments, mode))
                    rows.append(row(f"{label}, {CONFIGURATIONS[0][0]} ({era})", on))
                    rows.append(row(f"{label}, {CONFIGURATIONS[1][0]} ({era})", off))
                    rows.append(added(f"added by tracing ({era})", on, off))
        finally:
            for stack in stacks:
                stack.stop()
    return rows


class _Dropped(SpanExporter):
    """An exporter that encodes nothing: the queue and the batching are measured, not NATS."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _per_span(tracer: Tracer) -> list[float]:
    """Microseconds of one span made current around nothing, ended, and handed to the processor, per sample."""
    samples = []
    for _ in range(SPANS):
        started = time.perf_counter()
        with tracer.start_as_current_span("bench", attributes={"saip.tool": "word-count"}):
            pass
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


def _spans() -> list[list[object]]:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Dropped(), max_queue_size=4096, schedule_delay_millis=200))
    try:
        made = summary(_per_span(provider.get_tracer("bench")))
    finally:
        provider.shutdown()
    nothing = summary(_per_span(NoOpTracer()))
    return [
        [f"SDK span + batch queue ({SPANS} spans)", made["p50"], made["p90"], made["p99"]],
        [f"no-op span, tracing off ({SPANS} spans)", nothing["p50"], nothing["p90"], nothing["p99"]],
    ]


def run() -> str:
    load = "load average {:.2f} {:.2f} {:.2f} on {} cores".format(*os.getloadavg(), os.cpu_count() or 0)
    calls = table(
        f"Tracing on against off, {ROUNDS} alternating rounds of {CALLS} calls on each stack after {WARMUP} warm-up "
        f"(ms; {load} at the start)",
        ["", "p50", "p90", "p99"],
        _calls(),
    )
    spans = table("One span in-process (microseconds)", ["", "p50", "p90", "p99"], _spans())
    after = "load average {:.2f} {:.2f} {:.2f} at the end".format(*os.getloadavg())
    return f"{calls}\n\n{spans}\n({after})"
