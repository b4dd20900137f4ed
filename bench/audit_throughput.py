"""Audit records per second: acked into JetStream (the baseline) against chained by the collector."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from nats.aio.client import Client as NatsClient
from prometheus_client import CollectorRegistry

from bench import procstat
from bench.stats import table
from saip.audit.chain import decode_entry
from saip.audit.clients.consumer import JetStreamRecords
from saip.audit.clients.ledger import JetStreamLedger
from saip.audit.clients.store import REQUEST_TIMEOUT
from saip.audit.collector import BATCH, Collector
from saip.audit.metrics import AuditMetrics
from saip.common import bus, jetstream, logs, names, telemetry
from saip.common.masking import Masker
from saip.common.natsd import LocalNats, free_port
from saip.common.settings import SaipSettings
from saip.gateway.areas.monitor.client import AuditClient
from saip.gateway.clients import AuditPublisher, ServiceChannel
from saip.gateway.spool import Spool
from saip.v1 import common_pb2, events_pb2

RECORDS = 3000
CONCURRENCY = 64
# Records published one at a time, each once the one before is chained: each its own batch, as READ calls one after
# the other give the audit service.
ALONE = 300


def _record(n: int) -> events_pb2.ManagementCall:
    return events_pb2.ManagementCall(
        id=str(uuid.uuid4()),
        tool="saip_monitor_overview",
        level=common_pb2.APPROVAL_LEVEL_READ,
        outcome=common_pb2.OUTCOME_OK,
        duration_ms=3,
        summary=f"bench record {n}",
        arguments='{"limit":20}',
    )


async def _publish(publisher: AuditPublisher, count: int) -> float:
    limiter = anyio.Semaphore(CONCURRENCY)

    async def one(n: int) -> None:
        async with limiter:
            await publisher.management_call(_record(n))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(count):
            group.start_soon(one, n)
    return time.perf_counter() - started


async def _chained(audit: AuditClient, target: int, within: float = 300) -> float:
    started = time.perf_counter()
    with anyio.fail_after(within):
        while (await audit.overview()).chain_length < target:  # noqa: ASYNC110 - another process; bounded poll
            await anyio.sleep(0.02)
    return time.perf_counter() - started


async def _chaining_rate(nc: NatsClient) -> float:
    """Records a second, from the entries' own chained_at stamps: the collector chains a backlog before its service
    even answers, so polling it from outside would time nothing. The first batch's entries share the first stamp,
    so they are left out of the count."""
    stamps = await _stamps(nc)
    later = [stamp for stamp in stamps if stamp > stamps[0]]
    return len(later) / ((stamps[-1] - stamps[0]) / 1e9)


async def _stamps(nc: NatsClient) -> list[int]:
    """Every ledger entry's chained_at, in nanoseconds, oldest first."""
    ledger = JetStreamLedger(nc)
    first_seq, last_seq = await ledger.bounds()
    if last_seq == 0:
        return []
    async with contextlib.aclosing(ledger.read(first_seq, last_seq)) as messages:
        return [entry.chained_at.ToNanoseconds() async for m in messages if (entry := decode_entry(m.data))]


def _nats_cpu(nats: LocalNats) -> float:
    """What nats-server has spent so far: it shares the cores with the collector and the publishers, so what the
    collector sends it (entries, acknowledgements, log lines) slows both."""
    if nats.process is None:
        raise RuntimeError("nats-server is not running: start the LocalNats before reading its CPU")
    return procstat.cpu_seconds(nats.process.pid)


def _per_record(cpu_seconds: float) -> float:
    """Microseconds of CPU per record of a run of RECORDS."""
    return cpu_seconds / RECORDS * 1e6


async def _one_at_a_time(nc: NatsClient, publisher: AuditPublisher, audit_pid: int, nats: LocalNats) -> list[object]:
    """ALONE records, each published once the one before is on the ledger (seen on a plain subscription to the
    ledger subject): the audit service's and nats-server's CPU per record, and records a second, when every record
    is a batch of its own."""
    appended: asyncio.Queue[object] = asyncio.Queue()

    async def seen(msg: object) -> None:
        appended.put_nowait(msg)

    sub = await nc.subscribe(names.AUDIT_LEDGER, cb=seen)
    try:
        started, cpu_before, nats_before = time.perf_counter(), procstat.cpu_seconds(audit_pid), _nats_cpu(nats)
        for n in range(ALONE):
            await publisher.management_call(_record(n))
            await asyncio.wait_for(appended.get(), REQUEST_TIMEOUT * 5)
        elapsed = time.perf_counter() - started
        cpu, nats_cpu = procstat.cpu_seconds(audit_pid) - cpu_before, _nats_cpu(nats) - nats_before
    finally:
        await sub.unsubscribe()
    return [ALONE, ALONE / elapsed, cpu / ALONE * 1e6, nats_cpu / ALONE * 1e6]


def _start_audit(nats: LocalNats, home: Path, port: int, level: str) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAIP_")}
    env.update(
        {
            "SAIP_HOME": str(home),
            "SAIP_NATS_URL": nats.url,
            "SAIP_AUDIT_PORT": str(port),
            "SAIP_AUDIT_METRICS_PORT": str(free_port()),
            "SAIP_LOG_LEVEL": level,
        }
    )
    return subprocess.Popen([sys.executable, "-m", "saip.audit"], env=env, stdout=subprocess.DEVNULL)


async def _run(home: Path, level: str) -> tuple[list[list[object]], list[object]]:
    """The audit service as a process logging at `level`: WARNING leaves out the line it writes for each record
    chained, INFO (the default) writes it (to stdout and to NATS, as in production). Returns the rows of the rates,
    and the end-to-end run's CPU a record: the publishers' (this process, which meanwhile only polls the chain's
    length), the audit service's, nats-server's, their sum, and the records a second the machine's cores could give
    at that cost if they did nothing else."""
    nats = LocalNats(home / f"nats-{level}")
    nats.start()
    audit_process: subprocess.Popen[bytes] | None = None
    nc = await bus.connect(nats.url, "bench", within=10)
    spool = Spool(home / f"spool-{level}")
    try:
        await jetstream.ensure_stream(nc.jetstream(), jetstream.audit_stream_config(SaipSettings.load(home=home)))
        publisher = AuditPublisher(nc, spool)
        acked_alone = await _publish(publisher, RECORDS)

        port = free_port()
        audit_process = _start_audit(nats, home, port, level)
        channel = ServiceChannel("audit", f"127.0.0.1:{port}")
        audit = AuditClient(channel)
        with anyio.fail_after(30):
            while not await channel.healthy():  # noqa: ASYNC110 - another process; bounded poll
                await anyio.sleep(0.05)
        await _chained(audit, RECORDS)
        catch_up = await _chaining_rate(nc)

        started, cpu_before, nats_before = time.perf_counter(), procstat.cpu_seconds(audit_process.pid), _nats_cpu(nats)
        publishers_before = time.process_time()
        acked_live = await _publish(publisher, RECORDS)
        await _chained(audit, 2 * RECORDS)
        live = time.perf_counter() - started
        live_cpu = procstat.cpu_seconds(audit_process.pid) - cpu_before
        live_nats = _nats_cpu(nats) - nats_before
        live_publishers = time.process_time() - publishers_before
        alone = await _one_at_a_time(nc, publisher, audit_process.pid, nats)
        await channel.close()
    finally:
        await nc.close()
        spool.close()
        if audit_process is not None:
            audit_process.terminate()
            audit_process.wait(timeout=10)
        nats.stop()
    logging = f"the service logging at {level}"
    budget = [_per_record(live_publishers), _per_record(live_cpu), _per_record(live_nats)]
    ceiling = procstat.CORES / (sum(budget) / 1e6)
    return [
        [f"acked into JetStream, no collector (baseline; {level} run)", RECORDS, RECORDS / acked_alone, "", ""],
        [f"chained by the collector, catching up ({logging})", RECORDS, catch_up, "", ""],
        [f"acked into JetStream while the collector runs ({logging})", RECORDS, RECORDS / acked_live, "", ""],
        [
            f"published and chained, end to end ({logging})",
            RECORDS,
            RECORDS / live,
            _per_record(live_cpu),
            _per_record(live_nats),
        ],
        [f"published one at a time, each chained before the next ({logging})", *alone],
    ], [f"end to end, {logging}", *budget, sum(budget), ceiling]


async def _collector_alone(home: Path, batch: int, lines: bool = False) -> tuple[float, float, float]:
    """The collector in this process, on a backlog of RECORDS on a fresh server: records a second when it appends
    `batch` records at a time (1: one JetStream round trip per record, no batches), and this process's and
    nats-server's CPU per record meanwhile. With `lines`, this process logs as the service does at INFO: a JSON line
    for every record, to stdout (here /dev/null) and to NATS."""
    nats = LocalNats(home / f"nats-{batch}-{lines}")
    nats.start()
    nc = await bus.connect(nats.url, "bench", within=10)
    spool = Spool(home / f"spool-{batch}-{lines}")
    stack = contextlib.ExitStack()
    try:
        js = nc.jetstream(timeout=REQUEST_TIMEOUT)
        await jetstream.ensure_stream(js, jetstream.audit_stream_config(SaipSettings.load(home=home)))
        await _publish(AuditPublisher(nc, spool), RECORDS)
        source = JetStreamRecords(nc)
        await source.open()
        metrics = AuditMetrics(CollectorRegistry())
        collector = Collector(source, JetStreamLedger(nc), Masker(), metrics, batch=batch)
        shipping = _log_lines(stack, nc) if lines else None
        cpu_before, nats_before = time.process_time(), _nats_cpu(nats)
        collector.start()

        def chained() -> float:
            return metrics.registry.get_sample_value("saip_audit_records_total", {"kind": "management"}) or 0.0

        with anyio.fail_after(300):
            while chained() < RECORDS:  # noqa: ASYNC110 - a counter, not an event; bounded poll
                await anyio.sleep(0.05)
        cpu, nats_cpu = time.process_time() - cpu_before, _nats_cpu(nats) - nats_before
        await collector.stop()
        await source.close()
        if shipping is not None:
            shipping.cancel()
        return await _chaining_rate(nc), _per_record(cpu), _per_record(nats_cpu)
    finally:
        stack.close()
        await nc.close()
        spool.close()
        nats.stop()


def _log_lines(stack: contextlib.ExitStack, nc: NatsClient) -> asyncio.Task[None]:
    """Log as the audit service does (JSON lines at INFO, to /dev/null for stdout, shipped to NATS on `nc`) until
    `stack` closes, which puts this process's logging back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    devnull = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - the stack closes it
    logs.setup("audit", "INFO", stream=devnull)

    def restore() -> None:
        root.handlers[:] = handlers
        root.setLevel(level)
        telemetry.SHIPPER.service = None

    stack.callback(restore)
    return asyncio.create_task(telemetry.SHIPPER.ship(nc))


def run() -> str:
    with tempfile.TemporaryDirectory() as home:
        rows, budgets = [], []
        for level in ("WARNING", "INFO"):
            rates, budget = anyio.run(_run, Path(home), level)
            rows += rates
            budgets.append(budget)
        for batch, lines, label in (
            (1, False, "one record per append (no batches)"),
            (BATCH, False, f"batches of up to {BATCH}"),
            (BATCH, True, f"batches of up to {BATCH}, a log line a record (INFO)"),
        ):
            rate, cpu, nats_cpu = anyio.run(_collector_alone, Path(home), batch, lines)
            rows.append([f"chained in-process, {label}", RECORDS, rate, cpu, nats_cpu])
    rates = table(
        f"Audit records per second ({CONCURRENCY} concurrent publishers, the gateway's publisher); CPU per record of"
        " the audit service's process (end to end) or of the collector's (in-process), and of nats-server meanwhile",
        ["", "records", "records/s", "CPU us/record", "nats-server CPU us/record"],
        rows,
    )
    budget = table(
        f"CPU a record published and chained end to end (us), and what {procstat.CORES} cores give at that cost"
        " (records/s)",
        ["", "publishers", "audit service", "nats-server", "all", f"{procstat.CORES} cores' ceiling"],
        budgets,
    )
    return f"{rates}\n\n{budget}"
