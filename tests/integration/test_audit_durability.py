"""The audit service as a real process (`python -m saip.audit`): records published while the collector is
killed with SIGKILL and restarted, and while nats-server restarts, are all chained, each exactly once, in
stream order, and the chain verifies; so is a burst of thousands with the collector killed in the middle of it, and
one that two collector processes share while one of them is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from saip.audit import records
from saip.audit.server import STOP_WITHIN
from saip.common import jetstream, names
from saip.common.natsd import LocalNats, free_port
from saip.common.settings import SaipSettings
from saip.gateway.clients import AuditPublisher
from saip.gateway.spool import Spool
from saip.v1 import audit_pb2, events_pb2
from tests.integration.audit_support import (
    audit_client,
    ledger_entries,
    management_call,
    risk_event,
    tool_call,
)
from tests.waiting import eventually

pytestmark = pytest.mark.integration

SERVICE = "saip.v1.AuditService"
# The service's own bound on its stop, and what a loaded machine may add around it (the interpreter's exit).
STOPS_WITHIN = STOP_WITHIN + 5.0


class AuditProcess:
    """`python -m saip.audit` on fixed ports (kept across restarts), its output in a log file."""

    def __init__(self, nats_url: str, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.metrics_port = free_port()
        self.log = home / "audit.log"
        self.env = {
            **os.environ,
            "SAIP_NATS_URL": nats_url,
            "SAIP_AUDIT_PORT": str(self.port),
            "SAIP_AUDIT_METRICS_PORT": str(self.metrics_port),
            "SAIP_HOME": str(home),
        }
        self.process: subprocess.Popen[bytes] | None = None

    def spawn(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "saip.audit"], env=self.env, cwd=self.home, stdout=log, stderr=subprocess.STDOUT
            )

    async def start(self) -> None:
        self.spawn()
        await self.serving()

    async def serving(self, within: float = 30.0) -> None:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)

            async def up() -> bool:
                assert self.process is not None and self.process.poll() is None, self.tail()
                try:
                    answer = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                except grpc.aio.AioRpcError:
                    return False
                return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)

            await eventually(up, within=within)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, within: float) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=within)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """SIGTERM and wait, unless it has ended already (the end of a test). A service that does not end within
        its own stop's graces is killed, so nothing of it is left to the next test, and fails with its log."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.terminate(within=STOPS_WITHIN)
            except subprocess.TimeoutExpired:
                self.kill()
                said = self.tail()
                raise AssertionError(f"the audit service did not stop on SIGTERM; its log ends:\n{said}") from None


def batch(prefix: str, count: int) -> list[events_pb2.AuditRecord]:
    kinds = (management_call, tool_call, risk_event)
    return [kinds[n % 3](f"{prefix}-{n}") for n in range(count)]


async def publish_all(publisher: AuditPublisher, batch_records: list[events_pb2.AuditRecord]) -> None:
    """Publish a batch at once through the gateway's publisher, as busy gateways do, so the collector has a backlog
    when it is killed; while NATS is away the publisher spools and flushes afterwards."""

    async def one(record: events_pb2.AuditRecord) -> None:
        assert await publisher.publish(records.subject_of(record), record, records.record_id(record)) is None

    async with anyio.create_task_group() as group:
        for record in batch_records:
            group.start_soon(one, record)


async def stream_order(js: JetStreamContext) -> list[str]:
    """The ids of the records on the record subjects, in stream order."""
    sub = await js.subscribe(
        names.AUDIT_SUBJECTS, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, config=ConsumerConfig()
    )
    ids = []
    try:
        with anyio.fail_after(10):
            while True:
                message = await sub.next_msg(timeout=5)
                if message.subject != names.AUDIT_LEDGER:
                    ids.append(records.record_id(events_pb2.AuditRecord.FromString(message.data)))
                if not message.metadata.num_pending:
                    return ids
    finally:
        await sub.unsubscribe()


async def test_what_a_former_run_spooled_is_published_at_the_start_without_waiting_for_a_new_call(
    nats_client: NatsClient, tmp_path: Path
) -> None:
    js = nats_client.jetstream(timeout=2)
    await jetstream.ensure_stream(js, jetstream.audit_stream_config(SaipSettings.load(home=tmp_path)))
    left = batch("left", 3)
    former = Spool(tmp_path / "spool")  # a gateway that spooled while NATS was away, then was stopped
    for record in left:
        former.append(records.subject_of(record), records.record_id(record), record.SerializeToString())
    former.close()
    spool = Spool(tmp_path / "spool")
    async with anyio.create_task_group() as flusher:
        flusher.start_soon(AuditPublisher(nats_client, spool).flush_forever)

        async def flushed() -> bool:
            return len(spool) == 0

        await eventually(flushed, within=15)
        flusher.cancel_scope.cancel()
    spool.close()
    assert await stream_order(js) == [records.record_id(record) for record in left]


async def test_every_record_is_chained_exactly_once_through_kill_9_and_a_nats_restart(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    js = nats_client.jetstream(timeout=2)
    audit = AuditProcess(nats_server.url, tmp_path)
    spool = Spool(tmp_path / "spool")
    publisher = AuditPublisher(nats_client, spool)
    published: list[str] = []

    async def send(prefix: str) -> None:
        records_batch = batch(prefix, 30)
        await publish_all(publisher, records_batch)
        published.extend(records.record_id(record) for record in records_batch)

    async with anyio.create_task_group() as flusher:
        flusher.start_soon(publisher.flush_forever)
        await audit.start()
        await send("a")
        audit.kill()  # with a backlog in hand: likely between an append and its acknowledgement
        await send("b")  # nothing chains these now; they wait in the stream
        await audit.start()
        await send("c")
        nats_server.stop()
        await send("d")  # NATS is down: the publisher spools these to disk, in order
        await anyio.to_thread.run_sync(nats_server.start)  # the same port and store

        async def flushed() -> bool:
            return len(spool) == 0

        await eventually(flushed, within=30)
        audit.kill()
        await audit.start()
        await send("e")
        flusher.cancel_scope.cancel()
    spool.close()

    async with audit_client(audit.port) as stub:

        async def settled() -> audit_pb2.GetOverviewResponse | None:
            try:
                overview = await stub.GetOverview(audit_pb2.GetOverviewRequest(), timeout=5)
            except grpc.aio.AioRpcError:
                return None
            return overview if overview.chain_length >= len(published) and overview.pending == 0 else None

        overview = await eventually(settled, within=45)
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest(), timeout=10)

    chained = [entry.source_id for _, entry in await ledger_entries(nats_client)]
    lost = set(published) - set(chained)
    assert not lost, f"lost {sorted(lost)}\n{audit.tail()}"
    assert len(chained) == len(set(chained)) == len(published) == overview.chain_length, "chained twice"
    assert chained == await stream_order(js)
    assert (report.ok, report.checked, report.first_index, report.last_index) == (True, 150, 1, 150)
    assert await anyio.to_thread.run_sync(audit.terminate, 5.0) == 0, audit.tail()  # SIGTERM drains in seconds


BURST = 4000
WAVE = 50  # records published at once while waiting for both collectors to take part


async def chain_length(port: int) -> int:
    async with audit_client(port) as stub:
        try:
            overview = await stub.GetOverview(audit_pb2.GetOverviewRequest(), timeout=5)
        except grpc.aio.AioRpcError:
            return 0
    return int(overview.chain_length)


async def all_chained(port: int, count: int, within: float = 90) -> audit_pb2.GetOverviewResponse:
    async with audit_client(port) as stub:

        async def settled() -> audit_pb2.GetOverviewResponse | None:
            try:
                overview = await stub.GetOverview(audit_pb2.GetOverviewRequest(), timeout=5)
            except grpc.aio.AioRpcError:
                return None
            return overview if overview.chain_length >= count and overview.pending == 0 else None

        return await eventually(settled, within=within)


async def verified(port: int) -> audit_pb2.VerifyChainResponse:
    async with audit_client(port) as stub:
        return await stub.VerifyChain(audit_pb2.VerifyChainRequest(), timeout=30)


def records_chained_by(audit: AuditProcess) -> float:
    """What this process counted as chained by itself (its /metrics), across the three kinds."""
    with urllib.request.urlopen(f"http://127.0.0.1:{audit.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("saip_audit_records_total{"))


async def test_a_burst_is_chained_exactly_once_in_stream_order_through_kill_9_in_the_middle_of_it(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    audit = AuditProcess(nats_server.url, tmp_path)
    spool = Spool(tmp_path / "spool")
    burst = batch("burst", BURST)
    try:
        await audit.start()
        publisher = AuditPublisher(nats_client, spool)
        async with anyio.create_task_group() as publishing:
            # Each third goes out as the kill before it is over, so every kill is in the middle of the burst however
            # fast the collector chains: the records of its third still arriving, the thirds after not yet published.
            for third in (1, 2):
                publishing.start_soon(publish_all, publisher, burst[(third - 1) * BURST // 3 : third * BURST // 3])
                await reaches(audit.port, third * BURST // 3 - BURST // 6)
                audit.kill()  # batches appended and not acknowledged, others in hand
                await audit.start()
            publishing.start_soon(publish_all, publisher, burst[2 * BURST // 3 :])
        overview = await all_chained(audit.port, BURST)
        report = await verified(audit.port)
    finally:
        audit.stop()
        spool.close()

    chained = [entry.source_id for _, entry in await ledger_entries(nats_client)]
    assert len(chained) == len(set(chained)) == BURST == overview.chain_length
    assert chained == await stream_order(nats_client.jetstream())
    assert (report.ok, report.checked) == (True, BURST)


async def test_two_collector_processes_share_a_burst_and_chain_it_exactly_once_while_one_is_killed(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    one, two = AuditProcess(nats_server.url, tmp_path / "one"), AuditProcess(nats_server.url, tmp_path / "two")
    spool = Spool(tmp_path / "spool")
    burst = batch("shared", BURST)
    try:
        for audit in (one, two):
            audit.home.mkdir()
            await audit.start()
        publisher = AuditPublisher(nats_client, spool)
        # Waves until each collector has chained some: one that starts a little later can find a whole backlog
        # taken by the other, and a kill of a collector that never took part would prove nothing.
        sent = 0
        while not (records_chained_by(one) and records_chained_by(two)):
            assert sent < BURST // 3, "the two collectors did not share the first third of the burst"
            await publish_all(publisher, burst[sent : sent + WAVE])
            sent += WAVE
            await reaches(two.port, sent)
        async with anyio.create_task_group() as publishing:
            # The last third goes out after the kill, so the kill is in the middle of the burst however fast they chain.
            publishing.start_soon(publish_all, publisher, burst[sent : 2 * BURST // 3])
            await reaches(two.port, sent + (2 * BURST // 3 - sent) // 2)
            taken_by_one = records_chained_by(one)
            one.kill()  # what it holds comes back to two after the ack wait
            publishing.start_soon(publish_all, publisher, burst[2 * BURST // 3 :])
        overview = await all_chained(two.port, BURST)
        report = await verified(two.port)
        taken_by_two = records_chained_by(two)
    finally:
        for audit in (one, two):
            audit.stop()
        spool.close()

    chained = [entry.source_id for _, entry in await ledger_entries(nats_client)]
    assert sorted(chained) == sorted(records.record_id(record) for record in burst)
    assert len(chained) == BURST == overview.chain_length
    assert (report.ok, report.checked) == (True, BURST)
    assert taken_by_one and taken_by_two, "both collectors chained part of the burst"


async def reaches(port: int, count: int, within: float = 60) -> None:
    """Wait until the service reports at least `count` chained entries."""

    async def far_enough() -> bool:
        return await chain_length(port) >= count

    await eventually(far_enough, within=within)


async def test_a_sigterm_ends_the_service_within_its_bound_while_nats_answers_nothing(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """A stopped nats-server keeps its connections open and answers nothing: the drain's flush and the close wait for
    it. The stop still ends within STOP_WITHIN (it took the drain's grace plus nats-py's 10 s flush before)."""
    audit = AuditProcess(nats_server.url, tmp_path)
    assert nats_server.process is not None
    try:
        await audit.start()
        nats_server.process.send_signal(signal.SIGSTOP)
        try:
            ended = await anyio.to_thread.run_sync(audit.terminate, STOP_WITHIN)
        finally:
            nats_server.process.send_signal(signal.SIGCONT)
    finally:
        audit.stop()
    assert ended == 0, audit.tail()
