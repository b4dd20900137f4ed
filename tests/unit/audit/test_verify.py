"""The verify walk reports the first broken link: a changed record, a deleted entry, a wrong prev_hash."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from saip.audit import chain
from saip.audit.chain import LedgerMessage
from saip.audit.verify import ChainWalk, verify
from saip.v1 import events_pb2
from tests.unit.audit.samples import chain_of, management_call


def messages(entries: Sequence[events_pb2.LedgerEntry]) -> list[LedgerMessage]:
    return [LedgerMessage(seq=10 + 2 * n, data=entry.SerializeToString()) for n, entry in enumerate(entries)]


async def stream(items: list[LedgerMessage]) -> AsyncIterator[LedgerMessage]:
    for item in items:
        yield item


def five() -> list[events_pb2.LedgerEntry]:
    return chain_of([management_call(f"m-{n}") for n in range(1, 6)])


async def test_an_intact_chain_verifies() -> None:
    report = await verify(stream(messages(five())))

    assert report.ok
    assert (report.checked, report.first_index, report.last_index, report.broken) == (5, 1, 5, None)


async def test_an_empty_ledger_verifies_with_nothing_checked() -> None:
    report = await verify(stream([]))

    assert report.ok
    assert report.checked == 0


async def test_a_changed_record_is_a_hash_mismatch_at_its_own_entry() -> None:
    entries = five()
    entries[2].record = management_call("m-3", summary="Publish 'something-else'").SerializeToString()

    report = await verify(stream(messages(entries)))

    assert not report.ok
    assert report.broken is not None
    assert (report.broken.index, report.broken.seq, report.broken.reason) == (3, 14, "hash mismatch")
    assert (report.checked, report.last_index) == (3, 2)


async def test_a_deleted_entry_is_an_index_gap_at_the_entry_after_it() -> None:
    listed = messages(five())
    del listed[1]

    report = await verify(stream(listed))

    assert report.broken is not None
    assert (report.broken.index, report.broken.seq, report.broken.reason) == (3, 14, "index gap: expected 2, found 3")


async def test_a_wrong_prev_hash_is_reported_against_the_entry_it_should_match() -> None:
    entries = five()
    forged = entries[3]
    forged.prev_hash = b"\x07" * 32
    forged.hash = chain.entry_hash(forged.prev_hash, forged.record)  # self-consistent, but not linked

    report = await verify(stream(messages(entries)))

    assert report.broken is not None
    assert (report.broken.index, report.broken.reason) == (4, "prev_hash does not match entry 3")


async def test_the_oldest_retained_entry_is_the_anchor_when_older_ones_aged_out() -> None:
    report = await verify(stream(messages(five()[2:])))

    assert report.ok
    assert (report.checked, report.first_index, report.last_index) == (3, 3, 5)


async def test_entry_one_must_start_from_the_genesis_hash() -> None:
    entries = five()
    first = entries[0]
    first.prev_hash = b"\x01" * 32
    first.hash = chain.entry_hash(first.prev_hash, first.record)

    report = await verify(stream(messages(entries[:1])))

    assert report.broken is not None
    assert report.broken.reason == "the first entry does not start from the genesis hash"


async def test_a_message_that_is_not_an_entry_is_reported_where_the_next_entry_was_expected() -> None:
    listed = messages(five()[:2])
    listed.append(LedgerMessage(seq=99, data=b"forged"))

    report = await verify(stream(listed))

    assert report.broken is not None
    assert (report.broken.index, report.broken.seq, report.broken.reason) == (3, 99, "not a ledger entry")


def test_the_walk_stops_at_the_first_broken_link() -> None:
    entries = five()
    entries[1].record = b"changed"
    entries[3].record = b"changed too"
    walk = ChainWalk()

    results = [walk.check(message) for message in messages(entries)]

    assert results == [True, False, False, False, False]
    report = walk.report()
    assert report.broken is not None
    assert report.broken.index == 2
    assert report.checked == 2
