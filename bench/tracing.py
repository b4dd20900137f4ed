"""What tracing costs: a READ management call and a published tool call through /mcp on a stack with tracing on (the
default: spans made and exported over NATS) against the same stack with `tracing.enabled: false`, both stacks up at
once and called in turn, a call at a time (which stack goes first alternating from pair to pair), so a change in the
machine's load falls on both, with the CPU each stack's processes spent per call, all of them and each of those a call
moves (what the calls cost beside their latency, on a machine whose other work makes latencies noisy); and
in-process, what one span costs on the call path (saip's span, made current and queued for export; the OpenTelemetry
SDK's span into its batch processor; a no-op span), and what exporting a span costs beside the calls (encoding it in
a batch, saip's rows against the OTLP protobuf the SDK's exporter encodes; the audit service's decoding and keeping
of it)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracer

from bench import procstat
from bench.cold_start import _cpu_seconds
from bench.mcp_latency import STACK_ENV
from bench.stats import added, row, summary, table
from bench.tool_latency import ARGUMENTS, _publish, _served
from saip.audit.traces import TraceStore, decode
from saip.common import tracing
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.spans import ProbeSettings, Published

CALLS = 600  # of each tool on each stack, in each era, the two stacks called in turn
WARMUP = 30
SPANS = 20_000
BATCHES = 40  # batches of tracing.BATCH spans encoded or decoded, per figure
ATTRIBUTES = {"saip.tool": "word-count", "saip.source": "authored"}
CONFIGURATIONS = (("tracing on (default)", {}), ("tracing off", {"SAIP_TRACING_ENABLED": "false"}))
TOOLS = (
    ("READ management call (saip_monitor_hitl)", "saip_monitor_hitl", {"recent": 1}),
    ("published JS tool (word-count)", "word-count", ARGUMENTS),
)
ERAS = (("legacy", "2025-11-25"), ("auto", "2026-07-28"))
# The processes whose CPU a call moves (the others of the stack idle through the rounds), by their stack names.
PROCESSES = ("gateway", "audit", "tools", "sandbox worker", "nats-server")


def _cpu_ms(stack: Stack) -> dict[str, float]:
    """Milliseconds of CPU each of the stack's processes has spent so far (the sandbox workers summed)."""
    return {name: seconds * 1000 for name, seconds in _cpu_seconds(stack).items()}


async def _rounds(
    stacks: Sequence[Stack], tool: str, arguments: dict[str, object], mode: str
) -> tuple[list[list[float]], list[dict[str, float]]]:
    """CALLS calls on each stack (after a warm-up on each), the two called in turn, one call at a time, and which goes
    first alternating from pair to pair: a change in the machine's load within a pair's few milliseconds falls on
    both. The samples of each stack, and the CPU each of its processes spent per call over the whole run (both stacks
    are up throughout, so what an idle stack spends meanwhile falls on both alike)."""
    samples: list[list[float]] = [[] for _ in stacks]
    async with (
        mcp_client(stacks[0].mcp_url, stacks[0].mcp_token, mode=mode) as on,
        mcp_client(stacks[1].mcp_url, stacks[1].mcp_token, mode=mode) as off,
    ):
        clients = (on, off)
        for client in clients:
            for _ in range(WARMUP):
                await client.call_tool(tool, arguments)
        before = [_cpu_ms(stack) for stack in stacks]
        for pair in range(CALLS):
            for index in (0, 1) if pair % 2 == 0 else (1, 0):
                started = time.perf_counter()
                result = await clients[index].call_tool(tool, arguments)
                samples[index].append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool} failed during the benchmark: {result.content}")
        after = [_cpu_ms(stack) for stack in stacks]
    spent = [
        {name: (ms - was.get(name, 0.0)) / CALLS for name, ms in now.items()}
        for was, now in zip(before, after, strict=True)
    ]
    return samples, spent


def _calls() -> tuple[list[list[object]], list[list[object]], list[list[object]]]:
    rows: list[list[object]] = []
    cpu: list[list[object]] = []
    processes: list[list[object]] = []
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
                    both, spent = anyio.run(_rounds, stacks, tool, arguments, mode)
                    on, off = (summary(samples) for samples in both)
                    rows.append(row(f"{label}, {CONFIGURATIONS[0][0]} ({era})", on))
                    rows.append(row(f"{label}, {CONFIGURATIONS[1][0]} ({era})", off))
                    rows.append(added(f"added by tracing ({era})", on, off))
                    on_cpu, off_cpu = (sum(each.values()) for each in spent)
                    cpu.append([f"{label} ({era})", on_cpu, off_cpu, on_cpu - off_cpu])
                    processes.append(
                        [f"{label} ({era})", *(spent[0].get(name, 0.0) - spent[1].get(name, 0.0) for name in PROCESSES)]
                    )
        finally:
            for stack in stacks:
                stack.stop()
    return rows, cpu, processes


class _Held(SpanExporter):
    """An exporter that keeps what it is handed and encodes nothing: the SDK's queue and batching are measured."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def _timed(make: Callable[[], object], count: int, per: int = 1) -> dict[str, float]:
    """Microseconds per item of `make()` (which handles `per` items), over `count` samples."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        make()
        samples.append((time.perf_counter() - started) * 1e6 / per)
    return summary(samples)


def _otel(tracer: Any) -> Callable[[], object]:
    def one() -> None:
        with tracer.start_as_current_span("bench", attributes=ATTRIBUTES):
            pass

    return one


async def _saip() -> tuple[dict[str, float], list[Any]]:
    """saip's span path into its queue (a slice at a time, so the queue never overflows), and one batch of its
    ended spans as the export takes them."""
    spans = tracing.tracer("probe")
    samples: list[float] = []
    async with tracing.traced(ProbeSettings.load(), Published()):  # type: ignore[arg-type]
        for _ in range(SPANS // tracing.BATCH):
            for _ in range(tracing.BATCH):
                started = time.perf_counter()
                with spans.span("bench", attributes=ATTRIBUTES):
                    pass
                samples.append((time.perf_counter() - started) * 1e6)
            await anyio.sleep(tracing.DELAY_MS / 1000 + 0.05)
        for _ in range(tracing.BATCH):
            spans.record("bench", time.time_ns(), attributes=ATTRIBUTES)
        # Taken before the export's next turn (no await between): what one batch holds.
        batch = list(tracing.spans.OPENED["probe"][-1].ended)
    return summary(samples), batch


def _spans() -> list[list[object]]:
    made, ended = anyio.run(_saip)
    batch = tracing.encode("probe", ended)
    held = _Held()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(held, max_queue_size=4096, schedule_delay_millis=200))
    try:
        sdk = _timed(_otel(provider.get_tracer("bench")), SPANS)
    finally:
        provider.shutdown()
    nothing = _timed(_otel(NoOpTracer()), SPANS)
    otlp = held.spans[: tracing.BATCH]
    store = TraceStore(100_000, 3600.0)
    return [
        row(f"saip span, made current and queued ({SPANS} spans)", made),
        row(f"SDK span + batch queue ({SPANS} spans)", sdk),
        row(f"no-op span, tracing off ({SPANS} spans)", nothing),
        row(
            f"encoding, saip's rows (per span, {BATCHES} batches of {tracing.BATCH})",
            _timed(lambda: tracing.encode("probe", ended), BATCHES, tracing.BATCH),
        ),
        row(
            f"encoding, OTLP protobuf, the SDK's export (per span, {BATCHES} batches of {tracing.BATCH})",
            _timed(lambda: encode_spans(otlp).SerializeToString(), BATCHES, tracing.BATCH),
        ),
        row(
            f"audit: decoding and keeping saip's rows (per span, {BATCHES} batches of {tracing.BATCH})",
            _timed(lambda: store.add(decode(batch)), BATCHES, tracing.BATCH),
        ),
    ]


def run() -> str:
    load = "load average {:.2f} {:.2f} {:.2f} on {} cores".format(*os.getloadavg(), os.cpu_count() or 0)
    latencies, cpu, processes = _calls()
    calls = table(
        f"Tracing on against off, {CALLS} calls on each stack after {WARMUP} warm-up, the two stacks called in turn "
        f"(ms; {load} at the start)",
        ["", "p50", "p90", "p99"],
        latencies,
    )
    spent = table(
        "CPU the stack's processes spent per call over the run (ms; clock ticks of "
        f"{1000 / procstat.CLOCK_TICKS:g} ms over {CALLS} calls)",
        ["", "tracing on", "tracing off", "added"],
        cpu,
    )
    by_process = table("CPU tracing added per call, by process (ms; tracing on minus off)", ["", *PROCESSES], processes)
    spans = table("One span in-process (microseconds)", ["", "p50", "p90", "p99"], _spans())
    after = "load average {:.2f} {:.2f} {:.2f} at the end".format(*os.getloadavg())
    return f"{calls}\n\n{spent}\n\n{by_process}\n\n{spans}\n({after})"
