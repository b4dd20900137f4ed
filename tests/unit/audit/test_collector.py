"""The collector's rules on in-memory fakes of its ports: one append per batch, each record once (by its id, however
it comes back), acknowledged only once chained, recovery from a failed or overtaken append without a fork, masking,
and rejection of what is no record."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import pytest
from prometheus_client import CollectorRegistry

from saip.audit import chain
from saip.audit.collector import ATOMIC_FROM, Collector
from saip.audit.errors import StoreUnavailable
from saip.audit.metrics import AuditMetrics
from saip.common.lifecycle import CANCEL_WITHIN
from saip.common.masking import Masker
from saip.v1 import events_pb2
from tests.unit.audit import samples
from tests.unit.audit.fakes import FakeLedger, FakeSource
from tests.waiting import eventually


@asynccontextmanager
async def collecting(source: FakeSource, ledger: FakeLedger, *, atomic_from: int = 1) -> AsyncIterator[AuditMetrics]:
    """The collector at work on the fakes; every batch is appended atomically unless `atomic_from` says otherwise."""
    metrics = AuditMetrics(CollectorRegistry())
    collector = Collector(source, ledger, Masker(), metrics, clock=lambda: samples.CHAINED_AT, atomic_from=atomic_from)
    collector.start()
    try:
        yield metrics
    finally:
        await collector.stop(grace=1.0)


def counted(metrics: AuditMetrics, name: str) -> float:
    return metrics.registry.get_sample_value(name) or 0.0


def calls(*ids: str) -> list[events_pb2.AuditRecord]:
    return [samples.management_call(record_id) for record_id in ids]


def assert_one_unforked_chain(ledger: FakeLedger) -> None:
    entries = [entry for _, entry in ledger.stored]
    assert [entry.index for entry in entries] == list(range(1, len(entries) + 1))
    assert entries[0].prev_hash == chain.GENESIS_HASH
    for before, after in itertools.pairwise(entries):
        assert after.prev_hash == before.hash
    assert all(entry.hash == chain.entry_hash(entry.prev_hash, entry.record) for entry in entries)


async def test_a_batch_is_chained_in_stream_order_in_one_append_and_acknowledged_after_it() -> None:
    ledger = FakeLedger()
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2", "m-3", "m-4"))
    async with collecting(source, ledger):
        await eventually(lambda: source.settled)

    assert ledger.ids == ["m-1", "m-2", "m-3", "m-4"]
    assert ledger.appends == [4]
    assert ledger.log == ["append m-1 m-2 m-3 m-4", "ack 1", "ack 2", "ack 3", "ack 4"]
    assert_one_unforked_chain(ledger)


async def test_a_batch_of_a_few_records_goes_one_append_each_in_stream_order() -> None:
    ledger = FakeLedger()
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2", "m-3"))
    async with collecting(source, ledger, atomic_from=ATOMIC_FROM):
        await eventually(lambda: source.settled)

    assert ledger.appends == [1, 1, 1]
    assert ledger.log == ["append m-1", "append m-2", "append m-3", "ack 1", "ack 2", "ack 3"]
    assert_one_unforked_chain(ledger)


async def test_a_record_delivered_twice_in_a_batch_or_again_later_is_chained_once() -> None:
    ledger = FakeLedger()
    source = FakeSource(ledger.log)
    first, _ = source.put(*calls("m-1", "m-2"))
    source.redeliver(first)  # in the same batch
    async with collecting(source, ledger) as metrics:
        await eventually(lambda: source.settled)
        source.redeliver(first)  # long after: recognised by its id
        source.put(*calls("m-3"))
        await eventually(lambda: source.settled)

    assert ledger.ids == ["m-1", "m-2", "m-3"]
    assert all(delivery.settled == "acked" for delivery in source.delivered)
    assert counted(metrics, "saip_audit_duplicate_records_total") == 2


async def test_an_append_that_fails_is_tried_again_and_the_records_are_chained_once() -> None:
    ledger = FakeLedger(failures=deque([StoreUnavailable("append a batch to the ledger: TimeoutError")]))
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2"))
    async with collecting(source, ledger):
        await eventually(lambda: source.settled)

    assert ledger.ids == ["m-1", "m-2"]
    assert ledger.log[0] == "append m-1 m-2"


async def test_each_retry_is_logged_with_its_attempt_and_the_store_back_ends_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    away = deque([StoreUnavailable("NATS is away"), StoreUnavailable("NATS is still away")])
    ledger = FakeLedger(failures=away)
    source = FakeSource(ledger.log)
    source.put(*calls("m-1"))
    with caplog.at_level(logging.WARNING, logger="saip.audit.collector"):
        async with collecting(source, ledger):
            await eventually(lambda: source.settled)

    retries = [record for record in caplog.records if record.getMessage() == "audit store unavailable; retrying"]
    assert [(record.__dict__["attempt"], record.__dict__["error"]) for record in retries] == [
        (1, "NATS is away"),
        (2, "NATS is still away"),
    ]
    assert ledger.ids == ["m-1"]


async def test_records_are_never_acknowledged_while_their_append_keeps_failing() -> None:
    failing: deque[Exception] = deque(StoreUnavailable("NATS is away") for _ in range(1000))
    ledger = FakeLedger(failures=failing)
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2"))
    async with collecting(source, ledger):
        await eventually(lambda: len(failing) < 999)  # retried at least once

    assert ledger.ids == []
    assert [delivery.settled for delivery in source.delivered] == [None, None]  # redelivered to the next collector


async def test_another_writer_appending_first_is_caught_up_with_and_the_chain_never_forks() -> None:
    ledger = FakeLedger(before_append=lambda store: store.extend_with(samples.tool_call("t-other")))
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2"))
    async with collecting(source, ledger) as metrics:
        await eventually(lambda: source.settled)

    assert ledger.ids == ["t-other", "m-1", "m-2"]
    assert_one_unforked_chain(ledger)
    assert counted(metrics, "saip_audit_chain_conflicts_total") == 1


async def test_a_record_another_collector_chained_meanwhile_is_left_out_of_the_batch() -> None:
    # A redelivery of m-1 went to another collector, which chained it just before this one's append.
    ledger = FakeLedger(before_append=lambda store: store.extend_with(samples.management_call("m-1")))
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2"))
    async with collecting(source, ledger) as metrics:
        await eventually(lambda: source.settled)

    assert ledger.ids == ["m-1", "m-2"]
    assert_one_unforked_chain(ledger)
    assert counted(metrics, "saip_audit_duplicate_records_total") == 1
    assert all(delivery.settled == "acked" for delivery in source.delivered)


async def test_a_batch_the_store_refuses_goes_one_at_a_time_and_the_repeat_is_found() -> None:
    # m-1 was chained long ago (past what this collector remembers); the store still knows its message id.
    ledger = FakeLedger()
    ledger.extend_with(samples.management_call("m-1"))
    ledger.extend_with(samples.management_call("m-0"))
    source = FakeSource(ledger.log)
    source.put(*calls("m-1", "m-2", "m-3"))
    async with collecting(source, ledger) as metrics:
        await eventually(lambda: source.settled)

    assert ledger.ids == ["m-1", "m-0", "m-2", "m-3"]
    assert ledger.appends == [1, 1]
    assert_one_unforked_chain(ledger)
    assert counted(metrics, "saip_audit_duplicate_records_total") == 1


async def test_secrets_are_masked_before_they_are_chained() -> None:
    ledger = FakeLedger()
    source = FakeSource(ledger.log)
    source.put(samples.management_call("m-1", summary="rotated with token=s3cr3t-value-42"))
    async with collecting(source, ledger):
        await eventually(lambda: source.settled)

    [(_, entry)] = ledger.stored
    assert events_pb2.AuditRecord.FromString(entry.record).management.summary == "rotated with token=***"


async def test_what_is_no_record_is_rejected_never_acknowledged_and_the_rest_is_chained() -> None:
    ledger = FakeLedger()
    source = FakeSource(ledger.log)
    garbage, record = source.put(b"\xff\xff not a record", samples.management_call("m-1"))
    async with collecting(source, ledger) as metrics:
        await eventually(lambda: source.settled)

    assert (garbage.settled, record.settled) == ("rejected", "acked")
    assert ledger.ids == ["m-1"]
    assert metrics.registry.get_sample_value("saip_audit_rejected_records_total", {"reason": "undecodable"}) == 1


class UnansweredLedger(FakeLedger):
    """A ledger whose store stopped answering appends (as NATS does while it is stopped)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    async def append_batch(self, entries: Sequence[events_pb2.LedgerEntry], expected_seq: int) -> int:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable: the store never answers")


async def test_a_batch_whose_append_never_returns_is_left_unacknowledged_when_the_grace_is_over() -> None:
    ledger = UnansweredLedger()
    source = FakeSource(ledger.log)
    taken = source.put(*calls("m-1", "m-2"))
    collector = Collector(source, ledger, Masker(), AuditMetrics(CollectorRegistry()), atomic_from=1)
    collector.start()
    await ledger.asked.wait()
    with anyio.fail_after(0.1 + CANCEL_WITHIN + 5):
        await collector.stop(grace=0.1)
    assert [delivery.settled for delivery in taken] == [None, None]  # redelivered later, nothing was chained
    assert ledger.stored == []
