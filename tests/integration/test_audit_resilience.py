"""Exactly-once chaining and tamper evidence: duplicates, a redelivery after a crash between append and
acknowledgement, two collectors at once, a batch the store refuses, forged and deleted ledger messages, and a restart
that rebuilds the views.
"""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import nats
import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import Header
from prometheus_client import CollectorRegistry

from saip.audit import chain, records
from saip.audit.chain import GENESIS
from saip.audit.clients.consumer import JetStreamRecords, NatsDelivery
from saip.audit.clients.ledger import JetStreamLedger
from saip.audit.clients.store import ensure_audit_stream
from saip.audit.collector import Collector
from saip.audit.entries import decode
from saip.audit.errors import BatchRefused, ChainMoved
from saip.audit.metrics import AuditMetrics
from saip.audit.ports import Linked
from saip.audit.server import Running
from saip.common import names
from saip.common.masking import Masker
from saip.common.natsd import LocalNats
from saip.v1 import audit_pb2, events_pb2
from tests.integration.audit_support import (
    audit_client,
    chain_calls,
    ledger_entries,
    ledger_messages,
    management_call,
    publish,
    ready_ledger,
    running_audit,
    settings,
    tool_call,
    wait_chained,
)
from tests.unit.audit import samples
from tests.waiting import eventually

pytestmark = pytest.mark.integration


def counted(app: Running, name: str) -> float:
    return app.metrics.registry.get_sample_value(name) or 0.0


async def test_a_record_published_twice_is_chained_once(nats_server: LocalNats, nats_client: NatsClient) -> None:
    js = nats_client.jetstream()
    record = management_call("m-1")
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, record)
        await publish(js, record)  # same Nats-Msg-Id: the stream keeps one
        # A different message id (a publisher past the stream's duplicate window) with the same record id.
        await js.publish(names.AUDIT_MANAGEMENT, record.SerializeToString(), headers={Header.MSG_ID.value: "x"})
        await publish(js, management_call("m-2"))
        await wait_chained(stub, 2)  # m-2 is chained after everything published before it
        duplicates = counted(app, "saip_audit_duplicate_records_total")

    assert [entry.source_id for _, entry in await ledger_entries(nats_client)] == ["m-1", "m-2"]
    assert duplicates == 1


class DiesBeforeAck:
    """A delivery whose collector process dies after the ledger append and before the acknowledgement."""

    def __init__(self, delivery: NatsDelivery, appended: anyio.Event) -> None:
        self._delivery = delivery
        self._appended = appended
        self.data, self.subject, self.seq, self.headers = (
            delivery.data,
            delivery.subject,
            delivery.seq,
            delivery.headers,
        )

    async def ack(self) -> None:
        self._appended.set()
        await anyio.sleep_forever()  # the process is gone: no acknowledgement ever leaves

    async def reject(self) -> None:
        await self._delivery.reject()


class CrashingSource:
    def __init__(self, source: JetStreamRecords, appended: anyio.Event) -> None:
        self._source = source
        self._appended = appended

    async def batch(self, limit: int) -> list[DiesBeforeAck]:
        return [DiesBeforeAck(delivery, self._appended) for delivery in await self._source.batch(limit)]


async def test_a_record_redelivered_after_a_crash_between_append_and_ack_is_chained_once(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream(timeout=2)
    await ensure_audit_stream(js, settings(nats_server.url))
    source = JetStreamRecords(nats_client, ack_wait=1.0)
    await source.open()
    appended = anyio.Event()
    crashing = Collector(
        CrashingSource(source, appended), JetStreamLedger(nats_client), Masker(), AuditMetrics(CollectorRegistry())
    )
    crashing.start()
    await publish(js, management_call("m-1"))
    with anyio.fail_after(10):
        await appended.wait()
    await crashing.stop(grace=0.1)
    await source.close()
    assert [entry.source_id for _, entry in await ledger_entries(nats_client)] == ["m-1"]

    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, management_call("m-2"))  # behind m-1: the new collector lets its redelivery come first
        await wait_chained(stub, 2)
        redelivered = counted(app, "saip_audit_duplicate_records_total")  # m-1 came back before m-2

    assert [entry.source_id for _, entry in await ledger_entries(nats_client)] == ["m-1", "m-2"]
    assert redelivered == 1


async def taken_ids(source: JetStreamRecords, count: int) -> list[list[str]]:
    """The record ids of the batches `source` hands out until `count` records were taken, batch by batch."""
    batches: list[list[str]] = []
    with anyio.fail_after(15):
        while sum(map(len, batches)) < count:
            if deliveries := await source.batch(256):
                batches.append([records.record_id(events_pb2.AuditRecord.FromString(d.data)) for d in deliveries])
    return batches


async def test_what_a_stopped_collector_left_comes_back_in_stream_order_before_newer_records(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream(timeout=2)
    await ensure_audit_stream(js, settings(nats_server.url))
    for n in range(1, 5):
        await publish(js, management_call(f"m-{n}"))
    stopped = await nats.connect(nats_server.url)
    try:
        taken = JetStreamRecords(stopped, ack_wait=1.0)
        await taken.open()
        held: list[NatsDelivery] = []
        with anyio.fail_after(10):
            while len(held) < 4:
                held += await taken.batch(256)
        # JetStream queues a record given back ahead of those whose ack wait runs out later, and so redelivers
        # m-3 first: a redelivery order that is not the stream's, as a redelivery that did not go through gives.
        await held[2].msg.nak()
    finally:
        await stopped.close()  # stopped with the four in hand, none acknowledged
    await publish(js, management_call("m-5"))

    source = JetStreamRecords(nats_client, ack_wait=1.0)
    await source.open()
    try:
        batches = await taken_ids(source, 5)
    finally:
        await source.close()

    assert batches[0][:4] == ["m-1", "m-2", "m-3", "m-4"]  # all of them at once, in stream order
    assert [record_id for batch in batches for record_id in batch] == ["m-1", "m-2", "m-3", "m-4", "m-5"]


async def test_the_ledger_refuses_a_stale_append_and_keeps_one_copy_of_a_repeated_one(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    ledger = await ready_ledger(nats_server, nats_client)
    now = datetime.now(UTC)
    first = chain.link(GENESIS, b"one", "a", now)

    appended = await ledger.append(first, expected_seq=0)
    repeated = await ledger.append(first, expected_seq=appended.seq)
    with pytest.raises(ChainMoved):
        await ledger.append(chain.link(GENESIS, b"two", "b", now), expected_seq=0)  # a fork from genesis
    head = await ledger.head()

    assert not appended.duplicate
    assert (repeated.duplicate, repeated.seq) == (True, appended.seq)
    assert (head.index, head.hash, head.seq, head.source_id) == (1, first.hash, appended.seq, "a")
    assert len(await ledger_messages(nats_client)) == 1


async def test_the_ledger_appends_a_batch_all_or_nothing_and_never_from_a_stale_head(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    ledger = await ready_ledger(nats_server, nats_client)
    batch = samples.chain_of([management_call(f"m-{n}") for n in range(1, 4)])

    last = await ledger.append_batch(batch, expected_seq=0)
    with pytest.raises(ChainMoved):
        await ledger.append_batch(samples.chain_of([management_call("m-x")]), expected_seq=0)  # a fork
    with pytest.raises(BatchRefused):  # m-3 is stored already: nothing of this batch is
        head = await ledger.head()
        await ledger.append_batch(samples.chain_of([management_call("m-4"), management_call("m-3")], head), last)
    messages = await ledger_messages(nats_client)

    assert [message.seq for message in messages] == [last - 2, last - 1, last]
    assert [entry.source_id for _, entry in await ledger_entries(nats_client)] == ["m-1", "m-2", "m-3"]
    assert await ledger.chained_since(last - 2) == ["m-2", "m-3"]


async def test_a_batch_holding_a_record_chained_long_ago_is_appended_one_at_a_time(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    ledger = await ready_ledger(nats_server, nats_client)
    js = nats_client.jetstream(timeout=2)
    await ledger.append_batch(samples.chain_of([management_call("m-1"), management_call("m-0")]), 0)
    source = JetStreamRecords(nats_client, ack_wait=1.0)
    await source.open()
    metrics = AuditMetrics(CollectorRegistry())
    # It remembers none of what was chained, and appends every batch atomically.
    collector = Collector(source, ledger, Masker(), metrics, atomic_from=1)
    collector.start()
    try:
        await publish(js, management_call("m-1"))  # a publisher past the duplicate window of its own ids
        await publish(js, management_call("m-2"))
        await eventually(lambda: _count(metrics, "saip_audit_records_total", kind="management") == 1)
        duplicates = _count(metrics, "saip_audit_duplicate_records_total")
    finally:
        await collector.stop(grace=1)
        await source.close()

    entries = [entry for _, entry in await ledger_entries(nats_client)]
    assert [entry.source_id for entry in entries] == ["m-1", "m-0", "m-2"]
    assert (entries[2].index, entries[2].prev_hash) == (3, entries[1].hash)
    assert duplicates == 1


async def test_the_collector_tells_of_each_entry_it_appended_at_its_place_in_the_stream(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    ledger = await ready_ledger(nats_server, nats_client)
    js = nats_client.jetstream(timeout=2)
    for n in range(1, 41):  # a backlog: taken as atomic batches
        await publish(js, management_call(f"m-{n}"))
    source = JetStreamRecords(nats_client, ack_wait=1.0)
    await source.open()
    metrics = AuditMetrics(CollectorRegistry())
    appended: list[Linked] = []
    collector = Collector(source, ledger, Masker(), metrics, batch=32, on_appended=appended.extend)
    collector.start()
    try:
        await publish(js, management_call("m-alone"))  # after the backlog: one append by itself
        await eventually(lambda: _count(metrics, "saip_audit_records_total", kind="management") == 41)
    finally:
        await collector.stop(grace=1)
        await source.close()

    stored = {message.seq: message.data for message in await ledger_messages(nats_client)}
    assert [linked.entry.source_id for linked in appended] == [f"m-{n}" for n in range(1, 41)] + ["m-alone"]
    assert [linked.entry.SerializeToString(deterministic=True) for linked in appended] == [
        stored[linked.seq] for linked in appended
    ]
    ledger_seqs = sorted(stored)
    assert [linked.after_seq for linked in appended] == [0, *ledger_seqs[:-1]]  # each right behind the one before


def _count(metrics: AuditMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_two_collectors_on_one_stream_keep_one_unforked_chain_with_every_record_once(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    published = [f"m-{n}" for n in range(1, 31)]
    async with (
        running_audit(nats_server.url) as one,
        running_audit(nats_server.url) as two,
        audit_client(two.port) as stub,
    ):
        for record_id in published:
            await publish(js, management_call(record_id))
        await wait_chained(stub, len(published))
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest())
        chained_by = [
            app.metrics.registry.get_sample_value("saip_audit_records_total", {"kind": "management"}) or 0.0
            for app in (one, two)
        ]
        conflicts = sum(counted(app, "saip_audit_chain_conflicts_total") for app in (one, two))
        messages = await ledger_messages(nats_client)
        for app in (one, two):
            await eventually(lambda app=app: app.views.last_seq >= messages[-1].seq)
        # Each service's views: its own collector's entries as it appended them, the other's decoded from the stream.
        in_views = [list(reversed(list(app.views.recent.newest_first()))) for app in (one, two)]

    entries = [entry for _, entry in await ledger_entries(nats_client)]
    # Two batches taken at the same moment by the two may be chained in either order; each record once.
    assert sorted(entry.source_id for entry in entries) == sorted(published)
    assert [entry.index for entry in entries] == list(range(1, 31))
    assert (report.ok, report.checked) == (True, 30)
    assert sum(chained_by) == 30
    assert all(chained_by), "both collectors took records"
    assert conflicts > 0, "the collectors contended for the head and neither forked the chain"
    assert in_views == [[decode(message) for message in messages]] * 2


async def test_a_forged_ledger_message_is_reported_by_verify_chain(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await chain_calls(js, stub, 3)
        (_, second), (_, third) = (await ledger_entries(nats_client))[1:]
        forged = events_pb2.LedgerEntry()
        forged.CopyFrom(second)  # entry 2 replayed with a changed record, hooked onto the head
        forged.index, forged.prev_hash = 4, third.hash
        forged.record = management_call("m-2", summary="nothing to see").SerializeToString()
        ack = await js.publish(names.AUDIT_LEDGER, forged.SerializeToString())
        await publish(js, management_call("m-4"))
        await wait_chained(stub, 5)
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest())

    assert not report.ok
    assert (report.broken.index, report.broken.seq, report.broken.reason) == (4, ack.seq, "hash mismatch")
    assert (report.checked, report.first_index, report.last_index) == (4, 1, 3)


async def test_a_deleted_ledger_message_is_reported_as_an_index_gap(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await chain_calls(js, stub, 4)
        entries = await ledger_entries(nats_client)
        await js.delete_msg(names.AUDIT_STREAM, entries[1][0])
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest())

    assert not report.ok
    assert (report.broken.index, report.broken.seq) == (3, entries[2][0])
    assert report.broken.reason == "index gap: expected 2, found 3"


async def test_garbage_on_the_ledger_is_reported_and_the_chain_continues_from_the_last_entry(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, management_call("m-1"))
        await wait_chained(stub, 1)
        garbage = await js.publish(names.AUDIT_LEDGER, b"\xff\xff not an entry")
        await publish(js, management_call("m-2"))
        await wait_chained(stub, 2)
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest())

    first, damaged, second = await ledger_messages(nats_client)
    one, two = chain.decode_entry(first.data), chain.decode_entry(second.data)
    assert damaged.seq == garbage.seq
    assert one is not None and two is not None
    assert (two.index, two.prev_hash) == (2, one.hash)
    assert (report.ok, report.broken.index, report.broken.seq) == (False, 2, garbage.seq)
    assert report.broken.reason == "not a ledger entry"


async def test_a_restarted_service_rebuilds_its_views_from_the_ledger_and_continues_the_chain(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url, capacity=3) as first, audit_client(first.port) as stub:
        for n in range(1, 6):
            await publish(js, management_call(f"m-{n}"))
        await publish(js, tool_call("t-1"))
        await wait_chained(stub, 6)
    await publish(js, management_call("m-6"))  # while no collector runs: it waits in the stream

    async with running_audit(nats_server.url, capacity=3) as second, audit_client(second.port) as stub:
        await wait_chained(stub, 7)
        newest = await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest(limit=3))
        older = await stub.ListManagementCalls(
            audit_pb2.ListManagementCallsRequest(limit=3, before_seq=newest.next_before_seq)
        )
        tools = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest())
        overview = await stub.GetOverview(audit_pb2.GetOverviewRequest())

    assert [(e.index, e.record.management.id) for e in newest.entries] == [(7, "m-6"), (5, "m-5"), (4, "m-4")]
    assert [e.record.management.id for e in older.entries] == ["m-3", "m-2", "m-1"]
    assert [e.record.tool_call.id for e in tools.entries] == ["t-1"]
    assert (overview.window, overview.chain_length) == (3, 7)
