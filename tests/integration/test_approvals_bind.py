"""Approvals bind what they describe, through a real gateway and the real tools and knowledge services on a real
NATS, in both protocol eras: while the person reads the question, a second session changes what it describes, and
the approved call is refused with nothing changed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.v1 import knowledge_pb2, tools_pb2
from tests.integration.gateways import replica_settings
from tests.integration.knowledge_support import ingest, knowledge_settings, knowledge_stub, running_knowledge
from tests.integration.tools_support import running_tools, save, tools_client
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
CLIENT = types.Implementation(name="bind-client", version="1.0")
TOKEN = "t" * 24
CHANGED = "changed since the question was asked"


def meanwhile(change: Callable[[], Awaitable[None]], questions: list[str]) -> Any:
    """The person's client: while the question is out a second session changes things; then the person approves."""

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        await change()
        return types.ElicitResult(action="accept", content={"approve": ["run"]})

    return answer


@asynccontextmanager
async def gateway_over(home: Path, nats_url: str, **addresses: str) -> AsyncIterator[Gateway]:
    settings = replica_settings(home, nats_url, "one", mcp_server_auth_token=TOKEN, **addresses)
    gateway = Gateway(settings)
    async with gateway.running():
        await eventually(lambda: len(gateway.registry.tools()) > 0)
        yield gateway


def message(result: Any) -> str:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return str(json.loads(block.text)["message"])


@pytest.mark.parametrize("era", ERAS)
async def test_a_publish_approved_as_l0_never_publishes_the_l4_rewrite(
    nats_server: LocalNats, tmp_path: Path, era: str
) -> None:
    async with (
        running_tools(nats_server.url) as tools,
        tools_client(tools.port) as other_session,
        gateway_over(tmp_path, nats_server.url, tools_addr=f"127.0.0.1:{tools.port}") as gateway,
    ):
        await save(other_session, document("adder"))
        assert (await other_session.TestTool(tools_pb2.TestToolRequest(name="adder"))).passed

        async def rewrite() -> None:
            read = (await other_session.GetTool(tools_pb2.GetToolRequest(name="adder"))).summary.revision
            opened = document("adder", sandbox={"networkMode": "open"}, humanInTheLoop={"mode": "DISABLED"})
            await save(other_session, opened, read)
            assert (await other_session.TestTool(tools_pb2.TestToolRequest(name="adder"))).passed

        questions: list[str] = []
        async with Client(
            gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=meanwhile(rewrite, questions)
        ) as client:
            said = message(await client.call_tool("saip_tools_publish", {"name": "adder"}))
        found = await other_session.GetTool(tools_pb2.GetToolRequest(name="adder"))
    assert "risk L0, network blocked" in questions[0]
    assert CHANGED in said and said.startswith("Tool 'saip_tools_publish' was not run" if era == "auto" else "'adder'")
    assert found.summary.state == tools_pb2.TOOL_STATE_DRAFT


@pytest.mark.parametrize("era", ERAS)
async def test_a_knowledge_tool_approved_over_the_runbook_never_serves_the_payroll(
    nats_server: LocalNats, tmp_path: Path, era: str
) -> None:
    async with (
        running_knowledge(knowledge_settings(tmp_path / "knowledge", nats_server.url)) as knowledge,
        knowledge_stub(knowledge.port) as other_session,
        gateway_over(tmp_path, nats_server.url, knowledge_addr=f"127.0.0.1:{knowledge.port}") as gateway,
    ):
        await ingest(other_session, text="# Runbook\n\nRestart the broker with systemctl.", name="Runbook")
        scoped = knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=["Runbook"])
        await other_session.ApplyPipeline(scoped)

        async def widen() -> None:
            await ingest(other_session, text="# Payroll\n\nEvery salary and bank account.", name="Payroll")
            await other_session.ApplyPipeline(
                knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=["Runbook", "Payroll"])
            )

        questions: list[str] = []
        arguments = {"name": "ops_answers", "description": "Answers ops questions.", "pipeline": "Ops"}
        async with Client(
            gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=meanwhile(widen, questions)
        ) as client:
            said = message(await client.call_tool("saip_knowledge_publish_tool", arguments))
        status = await other_session.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
    assert "searching the pipeline 'Ops' over 'Runbook':" in questions[0]
    assert f"he pipeline 'Ops' {CHANGED}" in said  # "The ..." in 2025-11-25, "... was not run: the ..." in 2026-07-28
    assert list(status.tools) == []
