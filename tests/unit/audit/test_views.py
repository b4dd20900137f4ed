"""Rings, paging (ring first, then the stream below the ring's horizon), rebuild, tails, recent decisions."""

from __future__ import annotations

import anyio
import pytest

from saip.audit import chain, paging
from saip.audit.chain import LedgerMessage, decode_entry
from saip.audit.entries import Chained, decode
from saip.audit.errors import InvalidRequest, StoreUnavailable, TailTooSlow
from saip.audit.paging import MAX_PAGE, Ring
from saip.audit.ports import Linked
from saip.audit.views import AuditViews
from saip.v1 import common_pb2, events_pb2
from tests.unit.audit.samples import (
    CHAINED_AT,
    MemoryLedger,
    chain_of,
    management_call,
    risk_event,
    tool_call,
)


def ledger_of(count: int) -> MemoryLedger:
    """`count` management calls m-1..m-N: every third a failure, tools alternate between two names."""
    calls = [
        management_call(
            f"m-{n}",
            tool="saip_tools_publish" if n % 2 else "saip_tools_delete",
            outcome=common_pb2.OUTCOME_ERROR if n % 3 == 0 else common_pb2.OUTCOME_OK,
        )
        for n in range(1, count + 1)
    ]
    return MemoryLedger(chain_of(calls))


def live_views(ledger: MemoryLedger, capacity: int) -> AuditViews:
    audit_views = AuditViews(capacity)
    for message in ledger.messages:
        audit_views.apply(message)
    return audit_views


def ids(items: list[Chained]) -> list[str]:
    return [item.record.management.id or item.record.tool_call.id for item in items]


def test_a_ring_keeps_the_newest_items_and_raises_its_horizon_past_evicted_ones() -> None:
    ring: Ring[LedgerMessage] = Ring(3, lambda _: None)
    for seq in (2, 4, 6, 8, 10):
        ring.add(LedgerMessage(seq, b""))

    assert [item.seq for item in ring.newest_first()] == [10, 8, 6]
    assert ring.full
    assert ring.horizon == 5


def test_the_views_sort_each_entry_into_its_rings_and_derive_management_events() -> None:
    read = management_call("m-read", tool="saip_tools_list", level=common_pb2.APPROVAL_LEVEL_READ)
    ledger = MemoryLedger(chain_of([read, management_call("m-pub"), tool_call("t-1"), risk_event("r-1")]))

    audit_views = live_views(ledger, capacity=10)

    assert len(audit_views.management) == 2
    assert len(audit_views.tools) == 1
    assert [risk.event.id for risk in audit_views.risks.newest_first()] == ["r-1", "m-pub:management"]
    assert audit_views.last is not None
    assert (audit_views.last.index, audit_views.last.seq) == (4, 8)


def test_a_message_applied_twice_is_taken_once() -> None:
    ledger = ledger_of(2)
    audit_views = live_views(ledger, capacity=10)

    assert audit_views.apply(ledger.messages[-1]) is None
    assert len(audit_views.management) == 2


def linked_of(
    messages: list[LedgerMessage], calls: list[events_pb2.AuditRecord], *, after_seq: int = 0
) -> list[Linked]:
    """What the collector that appended these ledger messages' entries tells the views; the first was appended
    behind the ledger message at `after_seq`."""
    afters = [after_seq] + [message.seq for message in messages[:-1]]
    return [
        Linked(message.seq, after, decode_entry(message.data) or events_pb2.LedgerEntry(), record, CHAINED_AT)
        for message, after, record in zip(messages, afters, calls, strict=True)
    ]


async def test_entries_this_collector_appended_behind_what_the_views_hold_are_applied_at_once() -> None:
    calls = [management_call("m-1"), tool_call("t-1"), risk_event("r-1")]
    ledger = MemoryLedger(chain_of(calls))
    audit_views = AuditViews(capacity=10)

    with audit_views.tail(0) as (_, tail):
        audit_views.appended(linked_of(ledger.messages, calls))
        with anyio.fail_after(1):
            tailed = [(await tail.next()).record for _ in calls]

    assert list(audit_views.recent.newest_first())[::-1] == [decode(message) for message in ledger.messages]
    assert tailed == calls
    assert audit_views.last_seq == ledger.last_seq
    assert [audit_views.apply(message) for message in ledger.messages] == [None, None, None]  # passed by
    assert len(audit_views.recent) == 3


def test_entries_appended_behind_another_collectors_are_taken_as_they_are_when_the_ledger_brings_them_back() -> None:
    theirs = management_call("m-theirs")
    calls = [management_call("m-1"), tool_call("t-1")]
    ledger = MemoryLedger(chain_of([theirs, *calls]))
    audit_views = AuditViews(capacity=10)

    audit_views.appended(linked_of(ledger.messages[1:], calls, after_seq=ledger.messages[0].seq))
    assert len(audit_views.recent) == 0  # behind a message the follower has not brought yet
    applied = [audit_views.apply(message) for message in ledger.messages]

    assert [entry.record if entry else None for entry in applied[1:]] == calls
    assert all(entry is not None and entry.record is call for entry, call in zip(applied[1:], calls, strict=True))
    assert applied == [decode(message) for message in ledger.messages]


def test_a_message_other_than_the_entry_expected_at_its_sequence_is_decoded() -> None:
    ours, theirs = management_call("m-ours"), management_call("m-theirs")
    expected = linked_of(MemoryLedger(chain_of([ours])).messages, [ours], after_seq=-1)  # behind one not followed yet
    ledger = MemoryLedger(chain_of([theirs]))
    audit_views = AuditViews(capacity=10)

    audit_views.appended(expected)
    applied = audit_views.apply(ledger.messages[0])

    assert applied == decode(ledger.messages[0])
    assert applied is not None and applied.record.management.id == "m-theirs"


def test_entries_told_of_after_the_views_applied_them_change_nothing() -> None:
    calls = [management_call("m-1"), management_call("m-2")]
    ledger = MemoryLedger(chain_of(calls))
    audit_views = live_views(ledger, capacity=10)

    audit_views.appended(linked_of(ledger.messages, calls))
    later = MemoryLedger(chain_of([management_call("m-3")], head=chain.head_of(chain_of(calls)[-1], 4)))
    message = LedgerMessage(ledger.last_seq + 2, later.messages[0].data)

    assert (entry := audit_views.apply(message)) is not None and entry.record.management.id == "m-3"
    assert [call.record.management.id for call in audit_views.management.newest_first()] == ["m-3", "m-2", "m-1"]


def test_a_message_that_is_not_an_entry_is_skipped_but_counted_as_applied() -> None:
    audit_views = live_views(ledger_of(1), capacity=10)

    assert audit_views.apply(LedgerMessage(seq=99, data=b"\xff\xfe")) is None
    assert audit_views.last_seq == 99
    assert len(audit_views.management) == 1


async def test_a_page_from_the_ring_is_newest_first_with_a_cursor_to_the_next() -> None:
    ledger = ledger_of(5)
    audit_views = live_views(ledger, capacity=10)

    first = await paging.page(audit_views.management, lambda _: True, ledger, limit=2, before_seq=0)
    second = await paging.page(
        audit_views.management, lambda _: True, ledger, limit=2, before_seq=first.next_before_seq
    )
    last = await paging.page(audit_views.management, lambda _: True, ledger, limit=2, before_seq=second.next_before_seq)

    assert (ids(first.items), first.next_before_seq) == (["m-5", "m-4"], 8)
    assert (ids(second.items), second.next_before_seq) == (["m-3", "m-2"], 4)
    assert (ids(last.items), last.next_before_seq) == (["m-1"], 0)
    assert ledger.reads == 0  # the ring holds the whole history


async def test_a_page_that_fills_exactly_has_no_next_cursor() -> None:
    ledger = ledger_of(2)
    audit_views = live_views(ledger, capacity=10)

    found = await paging.page(audit_views.management, lambda _: True, ledger, limit=2, before_seq=0)

    assert (ids(found.items), found.next_before_seq) == (["m-2", "m-1"], 0)


async def test_pages_below_the_rings_horizon_are_read_from_the_stream() -> None:
    ledger = ledger_of(12)
    audit_views = live_views(ledger, capacity=4)  # holds m-9..m-12

    pages, cursor = [], 0
    while True:
        found = await paging.page(audit_views.management, lambda _: True, ledger, limit=5, before_seq=cursor)
        pages.append(ids(found.items))
        if not found.next_before_seq:
            break
        cursor = found.next_before_seq

    assert pages == [
        ["m-12", "m-11", "m-10", "m-9", "m-8"],
        ["m-7", "m-6", "m-5", "m-4", "m-3"],
        ["m-2", "m-1"],
    ]
    assert ledger.reads > 0


async def test_filters_apply_to_the_ring_and_the_stream_alike() -> None:
    ledger = ledger_of(12)
    audit_views = live_views(ledger, capacity=4)

    def failed_publish(entry: Chained) -> bool:
        call = entry.record.management
        return call.tool == "saip_tools_publish" and call.outcome == common_pb2.OUTCOME_ERROR

    found = await paging.page(audit_views.management, failed_publish, ledger, limit=5, before_seq=0)

    assert (ids(found.items), found.next_before_seq) == (["m-9", "m-3"], 0)


async def test_a_scan_that_runs_out_of_budget_returns_a_short_page_with_a_cursor_to_continue() -> None:
    ledger = ledger_of(40)
    audit_views = live_views(ledger, capacity=2)  # holds m-39, m-40 (seqs 78, 80)

    found = await paging.page(audit_views.management, lambda _: True, ledger, limit=20, before_seq=0, budget=10)

    assert ids(found.items) == ["m-40", "m-39", "m-38", "m-37", "m-36", "m-35", "m-34"]
    assert found.next_before_seq == 67  # sequences 67..76 were scanned; the next call goes on below 67


async def test_risk_pages_hold_raised_and_derived_events_with_a_type_filter() -> None:
    ledger = MemoryLedger(
        chain_of([risk_event("r-1"), management_call("m-1"), risk_event("r-2", risk_type="poisoning-hit")])
    )
    audit_views = live_views(ledger, capacity=10)

    everything = await paging.page(audit_views.risks, lambda _: True, ledger, limit=10, before_seq=0)
    poisoning = await paging.page(
        audit_views.risks,
        lambda risk: risk.event.type == "poisoning-hit",
        ledger,
        limit=10,
        before_seq=0,
    )

    assert [risk.event.id for risk in everything.items] == ["r-2", "m-1:management", "r-1"]
    assert [(risk.index, risk.seq) for risk in everything.items] == [(3, 6), (2, 4), (1, 2)]
    assert [risk.event.id for risk in poisoning.items] == ["r-2"]


def test_page_sizes_default_to_20_and_refuse_more_than_500_naming_the_range() -> None:
    assert paging.page_size(0) == 20
    assert paging.page_size(1) == 1
    assert paging.page_size(500) == 500
    assert paging.page_size(0, name="recent", default=10) == 10
    with pytest.raises(InvalidRequest, match=r"limit must be between 1 and 500 \(0 means 20\), got 501"):
        paging.page_size(501)


async def test_a_rebuild_stops_reading_back_once_every_ring_is_full() -> None:
    mixed = [management_call(f"m-{n}") if n % 2 else tool_call(f"t-{n}") for n in range(1, 601)]
    ledger = MemoryLedger(chain_of(mixed))  # seqs 2..1200
    audit_views = AuditViews(capacity=20)

    taken = await audit_views.rebuild(ledger, ledger.last_seq)

    assert 500 <= taken < 600  # the 500-entry backlog ring filled; the oldest entries were never read
    assert audit_views.recent.full
    assert ids(list(audit_views.management.newest_first()))[:2] == ["m-599", "m-597"]
    assert ids(list(audit_views.tools.newest_first()))[:2] == ["t-600", "t-598"]
    assert audit_views.management.horizon == 1119  # m-559 (at 1118) was evicted; from 1119 on all are kept
    assert audit_views.last_seq == 1200
    assert audit_views.last is not None
    assert audit_views.last.index == 600


async def test_a_rebuild_reads_back_no_further_than_its_budget() -> None:
    ledger = ledger_of(600)
    audit_views = AuditViews(capacity=20)

    taken = await audit_views.rebuild(ledger, ledger.last_seq, budget=700)

    assert taken == 350  # seqs 501..1200
    assert not audit_views.recent.full
    assert audit_views.recent.horizon == 501  # older entries are read from the stream when asked for
    assert len(audit_views.management) == 20


async def test_after_a_rebuild_from_the_stream_start_the_rings_hold_the_whole_history() -> None:
    ledger = MemoryLedger(chain_of([management_call("m-1"), tool_call("t-1")]))
    audit_views = AuditViews(capacity=10)

    await audit_views.rebuild(ledger, ledger.last_seq)

    assert (audit_views.management.horizon, audit_views.tools.horizon) == (0, 0)
    assert [entry.index for entry in audit_views.recent.newest_first()] == [2, 1]


async def test_a_rebuilt_ring_that_did_not_fill_pages_older_entries_from_the_stream() -> None:
    calls = [management_call(f"m-{n}") for n in range(1, 30)]
    ledger = MemoryLedger(chain_of([tool_call("t-old"), *calls]))
    audit_views = AuditViews(capacity=5)

    await audit_views.rebuild(ledger, ledger.last_seq, budget=20)
    found = await paging.page(audit_views.tools, lambda _: True, ledger, limit=5, before_seq=0)

    assert len(audit_views.tools) == 0
    assert audit_views.tools.horizon > 0
    assert ids(found.items) == ["t-old"]


async def test_keep_current_applies_what_follows_the_rebuild() -> None:
    ledger = ledger_of(3)
    audit_views = AuditViews(capacity=10)
    await audit_views.rebuild(ledger, ledger.messages[0].seq)

    await audit_views.keep_current(ledger)  # the memory ledger's follow ends after its last message

    assert ids(list(audit_views.management.newest_first())) == ["m-3", "m-2", "m-1"]


async def test_a_tail_sends_the_backlog_then_every_new_entry() -> None:
    ledger = ledger_of(4)
    audit_views = live_views(MemoryLedger(), capacity=10)
    for message in ledger.messages[:3]:
        audit_views.apply(message)

    with audit_views.tail(backlog=2) as (backlog, tail):
        audit_views.apply(ledger.messages[3])
        with anyio.fail_after(1):
            new = await tail.next()

    assert [entry.index for entry in backlog] == [2, 3]
    assert new.index == 4


async def test_a_tail_that_falls_behind_is_cut_off_after_what_it_was_given() -> None:
    ledger = ledger_of(3)
    audit_views = AuditViews(capacity=10)
    with audit_views.tail(backlog=0, buffer=2) as (_, tail):
        for message in ledger.messages:
            audit_views.apply(message)
        with anyio.fail_after(1):
            assert [(await tail.next()).index, (await tail.next()).index] == [1, 2]
            with pytest.raises(TailTooSlow):
                await tail.next()


async def test_closing_the_tails_tells_waiting_clients_to_reconnect() -> None:
    audit_views = AuditViews(capacity=10)
    with audit_views.tail(backlog=20) as (backlog, tail):
        audit_views.close_tails()
        with anyio.fail_after(1), pytest.raises(StoreUnavailable, match="reconnect"):
            await tail.next()
    assert backlog == []


def test_recent_decisions_are_the_newest_calls_that_needed_a_question() -> None:
    ledger = MemoryLedger(
        chain_of(
            [
                management_call("m-1", hitl=common_pb2.HITL_DECISION_APPROVED),
                management_call("m-2"),
                tool_call("t-1", hitl=common_pb2.HITL_DECISION_TIMEOUT),
                risk_event("r-1"),
                management_call("m-3", hitl=common_pb2.HITL_DECISION_DENIED),
            ]
        )
    )
    audit_views = live_views(ledger, capacity=10)

    assert ids(audit_views.recent_decisions(2)) == ["m-3", "t-1"]
    assert ids(audit_views.recent_decisions(10)) == ["m-3", "t-1", "m-1"]


def test_a_decision_is_found_behind_more_calls_without_one_than_the_recent_ring_holds() -> None:
    undecided = [management_call(f"m-{n}") for n in range(MAX_PAGE + 10)]
    ledger = MemoryLedger(chain_of([management_call("asked", hitl=common_pb2.HITL_DECISION_APPROVED), *undecided]))
    audit_views = live_views(ledger, capacity=10)

    assert ids(audit_views.recent_decisions(10)) == ["asked"]


def test_overview_counts_cover_the_rings() -> None:
    audit_views = live_views(ledger_of(6), capacity=4)  # m-3..m-6: m-3 and m-6 failed

    outcomes = audit_views.outcome_counts()

    assert (outcomes[common_pb2.OUTCOME_OK], outcomes[common_pb2.OUTCOME_ERROR]) == (2, 2)
    assert audit_views.risk_type_counts() == {"MANAGEMENT": 4}
