"""The audit service in-process against a real nats-server, queried through its real gRPC server."""

from __future__ import annotations

import itertools
import logging
import urllib.request

import anyio
import grpc
import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from saip.audit.chain import GENESIS_HASH, entry_hash
from saip.common import names
from saip.common.natsd import LocalNats
from saip.v1 import audit_pb2, common_pb2
from tests.integration.audit_support import (
    audit_client,
    chain_calls,
    chained_record,
    ledger_entries,
    management_call,
    publish,
    risk_event,
    running_audit,
    tool_call,
    wait_chained,
)
from tests.waiting import eventually

pytestmark = pytest.mark.integration

APPROVED, DECLINED, TIMEOUT = (
    common_pb2.HITL_DECISION_APPROVED,
    common_pb2.HITL_DECISION_DECLINED,
    common_pb2.HITL_DECISION_TIMEOUT,
)


async def test_published_records_are_chained_once_each_in_stream_order(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    published = [
        management_call("m-1"),
        tool_call("t-1"),
        risk_event("r-1"),
        management_call("m-2", tool="saip_tools_list", level=common_pb2.APPROVAL_LEVEL_READ),
        tool_call("t-2"),
    ]
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        for record in published:
            await publish(js, record)
        await wait_chained(stub, len(published))

    entries = [entry for _, entry in await ledger_entries(nats_client)]
    assert [entry.source_id for entry in entries] == ["m-1", "t-1", "r-1", "m-2", "t-2"]
    assert [entry.index for entry in entries] == [1, 2, 3, 4, 5]
    assert entries[0].prev_hash == GENESIS_HASH
    for before, after in itertools.pairwise(entries):
        assert after.prev_hash == before.hash
    assert all(entry.hash == entry_hash(entry.prev_hash, entry.record) for entry in entries)
    assert chained_record(entries[1]) == published[1]


async def test_lists_are_newest_first_with_filters_and_derived_management_events(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        for record in (
            management_call("m-1", outcome=common_pb2.OUTCOME_DECLINED),
            management_call("m-2", tool="saip_tools_list", level=common_pb2.APPROVAL_LEVEL_READ),
            tool_call("t-1", source="authored"),
            risk_event("r-1", risk_type="poisoning-hit"),
            management_call("m-3", tool="saip_tools_delete"),
            tool_call("t-2", tool="wiki_search"),
        ):
            await publish(js, record)
        await wait_chained(stub, 6)

        calls = await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest())
        declined = await stub.ListManagementCalls(
            audit_pb2.ListManagementCallsRequest(filter=audit_pb2.CallFilter(outcome=common_pb2.OUTCOME_DECLINED))
        )
        deletes = await stub.ListManagementCalls(
            audit_pb2.ListManagementCallsRequest(filter=audit_pb2.CallFilter(tool="saip_tools_delete"))
        )
        tools = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest())
        searches = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(tool="wiki_search"))
        proxied = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(source="exposed"))
        risks = await stub.ListRiskEvents(audit_pb2.ListRiskEventsRequest())
        managements = await stub.ListRiskEvents(audit_pb2.ListRiskEventsRequest(type="MANAGEMENT"))

    assert [e.record.management.id for e in calls.entries] == ["m-3", "m-2", "m-1"]
    assert [e.index for e in calls.entries] == [5, 2, 1]
    assert calls.next_before_seq == 0
    assert [e.record.management.id for e in declined.entries] == ["m-1"]
    assert [e.record.management.id for e in deletes.entries] == ["m-3"]
    assert [e.record.tool_call.id for e in tools.entries] == ["t-2", "t-1"]
    assert [e.record.tool_call.id for e in searches.entries] == ["t-2"]
    assert [e.record.tool_call.id for e in proxied.entries] == ["t-2"]
    # The successful read (m-2) raises no MANAGEMENT event; the declined and the destructive calls do.
    assert [e.event.id for e in risks.entries] == ["m-3:management", "r-1", "m-1:management"]
    assert [e.event.severity for e in managements.entries] == [common_pb2.SEVERITY_WARN] * 2
    assert managements.entries[1].event.summary == (
        "claude-code 2.1.314 ran saip_tools_publish (DESTRUCTIVE): DECLINED — Publish 'cafe-desk'"
    )


async def test_overview_counts_the_window_and_names_the_chain_head(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url, capacity=50) as app, audit_client(app.port) as stub:
        for record in (
            management_call("m-1"),
            management_call("m-2", outcome=common_pb2.OUTCOME_ERROR),
            management_call("m-3", outcome=common_pb2.OUTCOME_ERROR),
            risk_event("r-1"),
        ):
            await publish(js, record)
        await wait_chained(stub, 4)

        async def settled() -> audit_pb2.GetOverviewResponse | None:
            overview = await stub.GetOverview(audit_pb2.GetOverviewRequest())
            return overview if overview.pending == 0 else None

        overview = await eventually(settled)

    (_, head), *_ = reversed(await ledger_entries(nats_client))
    outcomes = {count.outcome: count.count for count in overview.management_outcomes}
    assert overview.window == 3
    assert (outcomes[common_pb2.OUTCOME_OK], outcomes[common_pb2.OUTCOME_ERROR], len(outcomes)) == (1, 2, 6)
    assert [(count.type, count.count) for count in overview.risk_events] == [
        ("MANAGEMENT", 3),
        ("sandbox-guard-blocked", 1),
    ]
    assert (overview.chain_length, overview.head_hash) == (4, head.hash.hex())
    assert overview.last_entry_time == head.chained_at
    assert overview.capacity == 50
    assert overview.collector_since.ToDatetime() <= overview.last_entry_time.ToDatetime()


async def test_hitl_summary_is_exactly_what_the_prometheus_counter_exports(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        before = await stub.GetHitlSummary(audit_pb2.GetHitlSummaryRequest(recent=3))  # the counts made once, all 0
        for record in (
            management_call("m-1", hitl=APPROVED),
            management_call("m-2", hitl=DECLINED, outcome=common_pb2.OUTCOME_DECLINED),
            management_call("m-3"),  # no question
            tool_call("t-1", hitl=TIMEOUT),
            tool_call("t-2", hitl=APPROVED),
        ):
            await publish(js, record)
        await wait_chained(stub, 5)
        summary = await stub.GetHitlSummary(audit_pb2.GetHitlSummaryRequest(recent=3))
        scraped = await anyio.to_thread.run_sync(scrape, app.metrics_port)

    side = {common_pb2.HITL_SIDE_SERVER: "server", common_pb2.HITL_SIDE_CHAT: "chat"}
    decision = {
        APPROVED: "approved",
        DECLINED: "declined",
        TIMEOUT: "timeout",
        common_pb2.HITL_DECISION_ELICIT_FAILED: "elicit-failed",
        common_pb2.HITL_DECISION_DENIED: "denied",
    }
    assert (before.questions, sum(count.count for count in before.counts), len(before.recent)) == (0, 0, 0)
    assert before.collector_since == summary.collector_since
    assert len(summary.counts) == 10
    for count in summary.counts:
        series = f'saip_audit_hitl_decisions_total{{decision="{decision[count.decision]}",side="{side[count.side]}"}}'
        assert f"{series} {float(count.count)}" in scraped
    assert summary.questions == 4
    assert summary.approval_rate == pytest.approx(0.5)
    assert [e.record.WhichOneof("record") for e in summary.recent] == ["tool_call", "tool_call", "management"]
    assert [e.index for e in summary.recent] == [5, 4, 2]


async def test_verify_chain_walks_every_retained_entry(nats_server: LocalNats, nats_client: NatsClient) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        empty = await stub.VerifyChain(audit_pb2.VerifyChainRequest())
        await chain_calls(js, stub, 7)
        report = await stub.VerifyChain(audit_pb2.VerifyChainRequest())

    assert (empty.ok, empty.checked) == (True, 0)
    assert (report.ok, report.checked, report.first_index, report.last_index) == (True, 7, 1, 7)
    assert not report.HasField("broken")


async def test_tail_sends_the_backlog_then_each_entry_as_it_is_chained(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await chain_calls(js, stub, 4)
        stream = stub.TailEntries(audit_pb2.TailEntriesRequest(backlog=2))
        with anyio.fail_after(10):
            backlog = [await stream.read(), await stream.read()]
            await publish(js, tool_call("t-1"))
            await publish(js, risk_event("r-1"))
            new = [await stream.read(), await stream.read()]
        stream.cancel()

    assert [entry.index for entry in backlog] == [3, 4]
    assert [entry.record.management.id for entry in backlog] == ["m-3", "m-4"]
    assert [(entry.index, entry.record.WhichOneof("record")) for entry in new] == [(5, "tool_call"), (6, "risk")]
    assert new[0].seq < new[1].seq


async def test_a_limit_above_500_is_refused_with_the_allowed_range(nats_server: LocalNats) -> None:
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest(limit=501))
        with pytest.raises(grpc.aio.AioRpcError) as tail_refused:
            await stub.TailEntries(audit_pb2.TailEntriesRequest(backlog=1000)).read()

    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == "limit must be between 1 and 500 (0 means 20), got 501"
    assert tail_refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "backlog must be between 1 and 500" in (tail_refused.value.details() or "")


async def test_pages_older_than_the_ring_are_read_from_the_stream(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url, capacity=3) as app, audit_client(app.port) as stub:
        for n in range(1, 11):
            await publish(js, management_call(f"m-{n}"))
            await publish(js, tool_call(f"t-{n}"))
        await wait_chained(stub, 20)
        pages, cursor = [], 0
        while True:
            page = await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest(limit=4, before_seq=cursor))
            pages.append([entry.record.management.id for entry in page.entries])
            if not page.next_before_seq:
                break
            cursor = page.next_before_seq

    assert pages == [["m-10", "m-9", "m-8", "m-7"], ["m-6", "m-5", "m-4", "m-3"], ["m-2", "m-1"]]


async def test_a_leaked_secret_is_masked_before_it_is_chained_or_logged(
    nats_server: LocalNats, nats_client: NatsClient, caplog: pytest.LogCaptureFixture
) -> None:
    js = nats_client.jetstream()
    leaky = management_call(
        "m-1",
        tool="saip_mcp_add_custom",
        level=common_pb2.APPROVAL_LEVEL_DESTRUCTIVE,
        outcome=common_pb2.OUTCOME_DENIED,
        summary="Register 'wiki' with Authorization: Bearer sk-live-0123456789",
    )
    leaky.management.arguments = '{"name":"wiki","token":"sk-live-0123456789"}'
    caplog.set_level(logging.INFO, logger="saip.audit")
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, leaky)
        await wait_chained(stub, 1)

    [(_, entry)] = await ledger_entries(nats_client)
    stored = chained_record(entry).management
    assert stored.summary == "Register 'wiki' with Authorization: Bearer ***"
    assert stored.arguments == '{"name":"wiki","token":"***"}'
    assert b"sk-live-0123456789" not in entry.record
    assert (
        "mgmt.call client=claude-code 2.1.314 tool=saip_mcp_add_custom level=DESTRUCTIVE outcome=DENIED "
        "durationMs=12 summary=Register 'wiki' with Authorization: Bearer ***"
    ) in caplog.messages
    assert not any("sk-live" in message for message in caplog.messages)


async def test_a_message_that_is_not_a_record_is_rejected_and_the_chain_goes_on(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await js.publish(names.AUDIT_RISK, b"\xff\xff not protobuf")
        await publish(js, risk_event("r-1"))
        await wait_chained(stub, 1)
        rejected = app.metrics.registry.get_sample_value("saip_audit_rejected_records_total", {"reason": "undecodable"})

    assert [entry.source_id for _, entry in await ledger_entries(nats_client)] == ["r-1"]
    assert rejected == 1


async def test_the_metrics_endpoint_exports_every_audit_metric(nats_server: LocalNats, nats_client: NatsClient) -> None:
    js = nats_client.jetstream()
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, management_call("m-1", outcome=common_pb2.OUTCOME_TIMEOUT, hitl=TIMEOUT))
        await publish(js, risk_event("r-1", reason="filesystem"))
        await publish(js, risk_event("r-2", risk_type="poisoning-hit"))
        await publish(js, risk_event("r-3", risk_type="hash-ledger-mismatch"))
        await wait_chained(stub, 4)
        scraped = await anyio.to_thread.run_sync(scrape, app.metrics_port)

    for line in (
        'saip_audit_management_calls_total{outcome="timeout",tool="saip_tools_publish"} 1.0',
        'saip_audit_management_calls_total{outcome="ok",tool="saip_tools_publish"} 0.0',
        'saip_audit_hitl_decisions_total{decision="timeout",side="server"} 1.0',
        'saip_audit_risk_events_total{severity="warn",type="MANAGEMENT"} 1.0',
        'saip_audit_sandbox_guard_blocks_total{reason="filesystem"} 1.0',
        "saip_audit_poisoning_hits_total 1.0",
        "saip_audit_tamper_rejects_total 1.0",
        'saip_audit_records_total{kind="risk"} 3.0',
        "saip_audit_chain_length 4.0",
        "saip_audit_pipeline_lag_seconds_count 4.0",
        "saip_audit_pending_records",
    ):
        assert line in scraped


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


async def test_records_arriving_one_at_a_time_take_no_pull_request_each(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    pulls: list[bytes] = []

    async def pulled(msg: Msg) -> None:
        pulls.append(msg.data)

    sub = await nats_client.subscribe(
        f"$JS.API.CONSUMER.MSG.NEXT.{names.AUDIT_STREAM}.{names.AUDIT_COLLECTOR}", cb=pulled
    )
    async with running_audit(nats_server.url) as app, audit_client(app.port) as stub:
        await publish(js, management_call("m-0"))
        await wait_chained(stub, 1)
        before = len(pulls)
        for n in range(1, 21):  # each record a batch of its own, as calls one after the other give
            await publish(js, management_call(f"m-{n}"))
            await wait_chained(stub, n + 1)
        during = len(pulls) - before
    await sub.unsubscribe()

    assert during <= 2  # the standing pull request brings them all (nats-py's fetch sent two or three a record)
