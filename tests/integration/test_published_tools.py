"""Published tools through a real gateway on a real NATS: listed from the serving service, re-listed when its bucket
changes (list_changed on every replica), called with the tool's own HITL question in both eras, and audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from nats.aio.client import Client as NatsClient

from saip.common import jetstream, names
from saip.common.natsd import LocalNats, free_port
from saip.gateway.server import Gateway
from saip.v1 import audit_pb2, common_pb2
from tests.integration.audit_support import audit_client, running_audit
from tests.integration.gateways import replica_settings
from tests.integration.publishing import Catalog, publishing, served
from tests.results import text
from tests.waiting import eventually

pytestmark = pytest.mark.integration

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="published-client", version="2.0")
TOOLS = "saip.v1.ToolsService"


def answering(action: str, approve: bool, questions: list[str]) -> Any:
    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action=action, content={"approve": ["run"] if approve else []})  # type: ignore[arg-type]

    return answer


async def touch(nc: NatsClient, key: str) -> None:
    """What a serving service does after changing what it serves: a write to its bucket."""
    kv = await jetstream.ensure_kv(nc.jetstream(), names.TOOLS_BUCKET, history=5)
    await kv.put(key, b"changed")


async def test_tools_follow_the_bucket_on_every_replica_without_a_token(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path
) -> None:
    catalog = Catalog()
    catalog.serve(served("echo"))
    async with publishing(TOOLS, catalog) as address:
        one = Gateway(replica_settings(tmp_path, nats_server.url, "one", tools_addr=address))
        two = Gateway(replica_settings(tmp_path, nats_server.url, "two", tools_addr=address))
        async with one.running(), two.running():
            for replica in (one, two):
                await eventually(lambda replica=replica: [tool.name for tool in replica.registry.tools()] == ["echo"])
                assert not replica.registrar.status.surface  # no token: published tools only
                assert await replica.health() == {"nats": "ok", "audit": "unreachable", "tools": "ok"}

            catalog.serve(served("echo"), served("shout", hitl=True))
            await touch(nats_client, "tool.shout")
            for replica in (one, two):
                await eventually(lambda replica=replica: replica.registry.tool("shout") is not None)

            catalog.serve(served("shout", hitl=True))
            await touch(nats_client, "tool.echo")
            await eventually(lambda: [tool.name for tool in two.registry.tools()] == ["shout"])
            [definition] = two.registry.tools()
            assert definition.annotations is not None and definition.annotations.read_only_hint is False
            assert definition.input_schema["required"] == ["text"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_hitl_tool_asks_then_runs_and_every_call_is_audited(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    catalog = Catalog()
    catalog.serve(served("echo"), served("shout", hitl=True, prompt="Shout '{text}' to the room?", risk=3))
    async with running_audit(nats_server.url) as audit, publishing(TOOLS, catalog) as address:
        settings = replica_settings(tmp_path, nats_server.url, "one", tools_addr=address)
        settings.audit_addr = f"127.0.0.1:{audit.port}"
        gateway = Gateway(settings)
        async with gateway.running():
            await eventually(lambda: gateway.registry.tool("shout") is not None)
            questions: list[str] = []
            async with Client(
                gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=answering("accept", True, questions)
            ) as client:
                echoed = await client.call_tool("echo", {"text": "hi"})
                shouted = await client.call_tool("shout", {"text": "token=abcd1234secret"})
                failed = await client.call_tool("echo", {"text": "fail"})

            assert isinstance(echoed, types.CallToolResult) and not echoed.is_error
            assert json.loads(text(echoed)) == {"result": "echo: hi"} == echoed.structured_content
            assert isinstance(shouted, types.CallToolResult) and not shouted.is_error
            assert questions == [
                "[risk L3] published-client 2.0 wants to run shout: Shout 'token=***' to the room?. "
                "Answer within 180 s, or the call is refused."
            ]
            assert isinstance(failed, types.CallToolResult) and failed.is_error
            assert text(failed) == "The tool failed: it was asked to."
            assert [(name, caller) for name, _, caller in catalog.calls] == [
                ("echo", "published-client"),
                ("shout", "published-client"),
                ("echo", "published-client"),
            ]

            async with audit_client(audit.port) as stub:

                async def three() -> list[Any] | None:
                    reply = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(limit=10), timeout=5)
                    entries = [entry.record.tool_call for entry in reply.entries]
                    return entries if len(entries) == 3 else None

                newest_first = await eventually(three)
            fail, shout, echo = newest_first
            assert (echo.tool, echo.source, echo.outcome, echo.hitl) == (
                "echo",
                "authored",
                common_pb2.OUTCOME_OK,
                common_pb2.HITL_DECISION_UNSPECIFIED,
            )
            assert (shout.outcome, shout.hitl, shout.side) == (
                common_pb2.OUTCOME_OK,
                common_pb2.HITL_DECISION_APPROVED,
                common_pb2.HITL_SIDE_SERVER,
            )
            assert "abcd1234secret" not in shout.arguments and "abcd1234secret" not in shout.result
            assert fail.outcome == common_pb2.OUTCOME_ERROR


@pytest.mark.parametrize("mode", ERAS)
async def test_a_declined_or_unaskable_hitl_tool_does_not_run(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    catalog = Catalog()
    catalog.serve(served("shout", hitl=True))
    async with publishing(TOOLS, catalog) as address:
        gateway = Gateway(replica_settings(tmp_path, nats_server.url, "one", tools_addr=address))
        async with gateway.running():
            await eventually(lambda: gateway.registry.tool("shout") is not None)
            questions: list[str] = []
            async with Client(
                gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=answering("accept", False, questions)
            ) as client:
                unticked = await client.call_tool("shout", {"text": "hi"})
            async with Client(gateway.mcp, mode=mode, client_info=CLIENT) as headless:
                denied = await headless.call_tool("shout", {"text": "hi"})

    assert isinstance(unticked, types.CallToolResult) and unticked.is_error
    assert text(unticked) == "Tool 'shout' was not run: the user declined. Do not retry it for this request."
    assert questions == [
        '[risk L0] published-client 2.0 wants to run shout: run it with {"text": "hi"}. '
        "Answer within 180 s, or the call is refused."
    ]
    assert isinstance(denied, types.CallToolResult) and denied.is_error
    assert text(denied).startswith("Tool 'shout' was not run: it needs human approval and this client cannot ask")
    assert catalog.calls == []


async def test_a_serving_service_that_is_away_is_named_and_picked_up_when_it_comes(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    catalog = Catalog()
    catalog.serve(served("lookup"))
    port = free_port()
    gateway = Gateway(replica_settings(tmp_path, nats_server.url, "one", knowledge_addr=f"127.0.0.1:{port}"))
    async with gateway.running():
        assert (await gateway.health())["knowledge"] == "unreachable"
        assert gateway.registry.tools() == []
        async with publishing("saip.v1.KnowledgeService", catalog, port):
            await eventually(lambda: [tool.name for tool in gateway.registry.tools()] == ["lookup"])
            assert (await gateway.health())["knowledge"] == "ok"
