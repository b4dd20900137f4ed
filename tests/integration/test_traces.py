"""Traces across the real services on a real NATS: one `tools/call` of a published authored tool is one trace, with
the gateway's request, gate and publish spans, the tools service's RPC and sandbox spans, and the audit collector's
chaining, kept by the audit service and read back as a tree; a knowledge search has its Qdrant query; a service with
`tracing.enabled: false` adds none."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.v1 import audit_pb2, audit_pb2_grpc, knowledge_pb2
from tests.integration.audit_support import audit_client, running_audit
from tests.integration.gateways import replica_settings
from tests.integration.knowledge_support import ingest, knowledge_settings, knowledge_stub, running_knowledge
from tests.integration.tools_support import publish_tested, running_tools, tools_client
from tests.results import envelope
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="traced-client", version="1.0")
CALL = "mcp tools/call"
TOKEN = "t" * 24


@asynccontextmanager
async def stack(nats_url: str, home: Path, **gateway: Any) -> AsyncIterator[tuple[Gateway, Any]]:
    """The audit and tools services and a gateway serving the published 'adder'; the audit service's stub."""
    async with running_audit(nats_url) as audit, running_tools(nats_url) as tools, audit_client(audit.port) as stub:
        async with tools_client(tools.port) as tools_stub:
            await publish_tested(tools_stub, document("adder"))
        settings = replica_settings(
            home,
            nats_url,
            "one",
            tools_addr=f"127.0.0.1:{tools.port}",
            audit_addr=f"127.0.0.1:{audit.port}",
            **gateway,
        )
        served = Gateway(settings)
        async with served.running():
            await eventually(lambda: served.registry.tool("adder") is not None)
            yield served, stub


async def calls_of(stub: audit_pb2_grpc.AuditServiceStub, tool: str) -> list[audit_pb2.TraceSummary]:
    listed = await stub.ListTraces(audit_pb2.ListTracesRequest(tool=tool), timeout=5)
    return [trace for trace in listed.traces if trace.name == CALL]


async def test_one_published_tool_call_is_one_trace_across_gateway_tools_and_audit(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with stack(nats_server.url, tmp_path) as (gateway, stub):
        async with Client(gateway.mcp, mode="legacy", client_info=CLIENT) as client:
            result = await client.call_tool("adder", {"a": 2, "b": 3})
        assert not result.is_error

        async def whole() -> audit_pb2.GetTraceResponse | None:
            found = await calls_of(stub, "adder")
            if not found:
                return None
            reply = await stub.GetTrace(audit_pb2.GetTraceRequest(trace_id=found[0].trace_id), timeout=5)
            return reply if {span.name for span in reply.spans} >= {"audit chain", "sandbox run"} else None

        reply = await eventually(whole, within=20.0)
        assert len(await calls_of(stub, "adder")) == 1

    summary = reply.trace
    assert (summary.tool, summary.outcome, summary.complete, summary.error) == ("adder", "OK", True, False)
    assert set(summary.services) == {"gateway", "tools", "audit"}
    tree = [(span.depth, span.service, span.name) for span in reply.spans]
    assert tree[0] == (0, "gateway", CALL)
    assert (1, "gateway", "gate call") in tree
    assert (2, "gateway", "gate run") in tree
    assert (3, "gateway", "grpc CallServedTool") in tree
    assert (4, "tools", "grpc CallServedTool") in tree
    assert (5, "tools", "sandbox run") in tree
    assert (2, "gateway", "nats publish saip.audit.tool") in tree
    assert (3, "audit", "audit chain") in tree
    by_id = {span.span_id: span for span in reply.spans}
    for span in reply.spans[1:]:
        parent = by_id[span.parent_span_id]
        assert parent.depth == span.depth - 1
        assert span.start_offset_ms >= parent.start_offset_ms
    server = next(span for span in reply.spans if span.service == "tools" and span.kind == "server")
    assert server.attributes["rpc.method"] == "CallServedTool"


async def test_a_gateway_with_tracing_off_makes_no_spans(nats_server: LocalNats, tmp_path: Path) -> None:
    async with stack(nats_server.url, tmp_path, tracing_enabled=False) as (gateway, stub):
        async with Client(gateway.mcp, mode="legacy", client_info=CLIENT) as client:
            result = await client.call_tool("adder", {"a": 1, "b": 1})
        assert not result.is_error

        # The tools service still traces: its server span starts a trace of its own, with no gateway span.
        async def served() -> list[audit_pb2.TraceSummary]:
            listed = await stub.ListTraces(audit_pb2.ListTracesRequest(), timeout=5)
            return [trace for trace in listed.traces if trace.name == "grpc CallServedTool"]

        [trace] = await eventually(served, within=20.0)
        assert list(trace.services) == ["tools"]
        assert await calls_of(stub, "adder") == []


async def test_the_monitor_tools_list_the_calls_traces_and_show_one_as_a_tree(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path, mcp_server_auth_token=TOKEN) as (gateway, _),
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        await eventually(lambda: gateway.registry.tool("saip_monitor_traces") is not None)
        assert not (await client.call_tool("adder", {"a": 2, "b": 2})).is_error

        async def listed() -> dict[str, Any] | None:
            found = envelope(await client.call_tool("saip_monitor_traces", {"tool": "adder", "outcome": "OK"}))
            calls = [trace for trace in found["data"]["traces"] if trace["name"] == CALL]
            # Each service sends its spans in batches of its own: wait until all three have arrived.
            return found if calls and {"audit", "gateway", "tools"} <= set(calls[0]["services"]) else None

        found = await eventually(listed, within=20.0)
        assert found["message"].startswith("1 trace, newest first, of ")
        assert found["message"].endswith(" kept (at most 2000, for 60 min after their last span).")
        [summary] = found["data"]["traces"]
        assert (summary["tool"], summary["outcome"]) == ("adder", "OK")
        none = envelope(await client.call_tool("saip_monitor_traces", {"tool": "adder", "minDurationMs": 86_400_000}))
        assert none["message"].startswith("0 traces, newest first") and none["data"]["traces"] == []

        shown = envelope(await client.call_tool("saip_monitor_trace_get", {"traceId": summary["traceId"].upper()}))
        unknown = await client.call_tool("saip_monitor_trace_get", {"traceId": "0" * 32})

    data = shown["data"]
    assert shown["message"] == (
        f"Trace {summary['traceId']}: {CALL}, {data['durationMs']:.1f} ms, {data['spanCount']} spans across "
        "audit, gateway, tools."
    )
    [root] = data["spans"]
    assert (root["name"], root["service"], root["kind"]) == (CALL, "gateway", "server")
    [gate] = root["children"]
    assert gate["name"] == "gate call" and gate["attributes"]["saip.tool"] == "adder"
    assert [child["name"] for child in gate["children"]] == ["gate run", "nats publish saip.audit.tool"]
    assert unknown.is_error or not envelope(unknown)["ok"]
    assert envelope(unknown)["message"] == (
        f"No trace '{'0' * 32}' is kept: the audit service keeps the recent traces only (audit.traces-max, "
        "audit.traces-max-age-minutes); list them with saip_monitor_traces."
    )


async def test_a_knowledge_search_traces_its_qdrant_query(nats_server: LocalNats, tmp_path: Path) -> None:
    settings = knowledge_settings(tmp_path / "home", nats_server.url)
    async with (
        running_audit(nats_server.url) as audit,
        audit_client(audit.port) as stub,
        running_knowledge(settings) as knowledge,
        knowledge_stub(knowledge.port) as search,
    ):
        await ingest(search, text="Restart the NATS broker with its store intact.", name="runbook.md")
        assert (await search.Search(knowledge_pb2.SearchRequest(query="restart the broker"))).hits

        async def searched() -> audit_pb2.GetTraceResponse | None:
            listed = await stub.ListTraces(audit_pb2.ListTracesRequest(), timeout=5)
            found = [trace for trace in listed.traces if trace.name == "grpc Search"]
            if not found:
                return None
            return await stub.GetTrace(audit_pb2.GetTraceRequest(trace_id=found[0].trace_id), timeout=5)

        reply = await eventually(searched, within=20.0)

    tree = [(span.depth, span.service, span.name, span.attributes.get("saip.kind")) for span in reply.spans]
    assert tree[0] == (0, "knowledge", "grpc Search", None)
    assert (1, "knowledge", "qdrant query", "lexical") in tree
