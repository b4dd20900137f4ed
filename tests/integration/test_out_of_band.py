"""Out-of-band approvals, the person's inbox, through a real gateway served over HTTP, the real tools and audit
services and NATS, answered with the real command line (`saip approvals`): a held 2025-11-25 call runs once the person
approves, a 2026-07-28 client's retry is declined, an out-of-band approval is bound like an elicited one (a draft
rewritten meanwhile is not published), the inbox lists who answered each question, and every change of a question is
a put to the saip-questions bucket a console can watch."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client
from nats.aio.client import Client as NatsClient

from saip.cli.group import cli
from saip.common import bus, names
from saip.common.natsd import LocalNats, free_port
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from saip.v1 import gateway_pb2, tools_pb2
from tests.integration.audit_support import running_audit
from tests.integration.gateways import ADMIN, replica_settings
from tests.integration.tools_support import running_tools, save, tools_client
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CRON = types.Implementation(name="nightly-cron", version="1")
EXPOSE = {"autoExpose": False, "tools": []}


@asynccontextmanager
async def stack(nats_url: str, home: Path) -> AsyncIterator[tuple[Gateway, str, int]]:
    """The gateway over HTTP with out-of-band approvals on, its token set, over a tools service."""
    async with running_tools(nats_url) as tools, running_audit(nats_url) as audit:
        settings = replica_settings(
            home,
            nats_url,
            "one",
            gateway_port=free_port(),
            tools_addr=f"127.0.0.1:{tools.port}",
            audit_addr=f"127.0.0.1:{audit.port}",
            management_out_of_band_approvals=True,
        )
        gateway = Gateway(settings)
        async with over_http(gateway):
            await gateway.token_service.rotate(created_by="test")
            await eventually(lambda: gateway.registry.tool("saip_tools_publish") is not None)
            yield gateway, f"http://127.0.0.1:{settings.gateway_port}", tools.port


async def saip(url: str, *arguments: str) -> Any:
    """`saip --json ...` against the gateway (in a thread: the gateway answers on this event loop)."""
    command = ["--url", url, "--admin-token", ADMIN, *arguments]
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def one_waiting(url: str) -> dict[str, Any] | None:
    found = (await saip(url, "approvals", "--json"))["data"]["approvals"]
    return found[0] if len(found) == 1 else None


def message(result: Any) -> str:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return str(json.loads(block.text)["message"])


async def test_a_held_2025_11_25_call_runs_once_the_person_approves_with_the_cli(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with stack(nats_server.url, tmp_path) as (gateway, url, _), anyio.create_task_group() as group:
        said: list[str] = []

        async def held() -> None:
            async with Client(gateway.mcp, mode="legacy", client_info=CRON) as client:
                said.append(message(await client.call_tool("saip_tools_set_exposure", EXPOSE)))

        group.start_soon(held)
        question = await eventually(lambda: one_waiting(url))
        assert question["held"] is True
        assert question["question"].startswith("[DESTRUCTIVE] nightly-cron 1 wants to run saip_tools_set_exposure")
        approved = await saip(url, "approvals", "approve", question["id"], "--json")
        assert approved["message"] == "Approved saip_tools_set_exposure for nightly-cron 1: it runs now."
    assert said == ["Exposure saved: serve published tools only when listed; also serve no others."]


async def test_a_2026_07_28_retry_learns_the_person_declined_with_the_cli(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path) as (gateway, url, _),
        Client(gateway.mcp, mode="auto", client_info=CRON) as client,
    ):
        asked = await client.session.call_tool("saip_tools_set_exposure", EXPOSE, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        question = await eventually(lambda: one_waiting(url))
        await saip(url, "approvals", "decline", question["id"], "--json")
        declined = await client.session.call_tool(
            "saip_tools_set_exposure", EXPOSE, request_state=asked.request_state, allow_input_required=True
        )
    assert (
        message(declined)
        == "Tool 'saip_tools_set_exposure' was not run: the user declined. Do not retry it for this request."
    )


async def test_an_out_of_band_approval_is_bound_to_the_draft_it_describes(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path) as (gateway, url, tools_port),
        tools_client(tools_port) as other_session,
        Client(gateway.mcp, mode="auto", client_info=CRON) as client,
    ):
        await save(other_session, document("adder"))
        assert (await other_session.TestTool(tools_pb2.TestToolRequest(name="adder"))).passed
        asked = await client.session.call_tool("saip_tools_publish", {"name": "adder"}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        question = await eventually(lambda: one_waiting(url))
        assert "risk L0, network blocked" in question["question"]

        read = (await other_session.GetTool(tools_pb2.GetToolRequest(name="adder"))).summary.revision
        await save(other_session, document("adder", sandbox={"networkMode": "open"}), read)
        assert (await other_session.TestTool(tools_pb2.TestToolRequest(name="adder"))).passed
        await saip(url, "approvals", "approve", question["id"], "--json")
        refused = await client.session.call_tool(
            "saip_tools_publish", {"name": "adder"}, request_state=asked.request_state, allow_input_required=True
        )
        found = await other_session.GetTool(tools_pb2.GetToolRequest(name="adder"))
    assert "'adder' changed since the question was asked" in message(refused)
    assert found.summary.state == tools_pb2.TOOL_STATE_DRAFT


async def test_the_inbox_says_who_answered_each_question_and_the_bucket_shows_each_change(
    nats_server: LocalNats, tmp_path: Path, nats_client: NatsClient
) -> None:
    changes: list[gateway_pb2.PendingQuestion] = []

    async def follow() -> None:
        kv = await nats_client.jetstream().key_value(names.QUESTIONS_BUCKET)
        async for entry in bus.kv_updates(kv):
            if entry is not None and entry.value:
                changes.append(gateway_pb2.PendingQuestion.FromString(entry.value))  # noqa: PERF401 - as they come

    async with stack(nats_server.url, tmp_path) as (gateway, url, _), anyio.create_task_group() as group:
        group.start_soon(follow)
        async with Client(gateway.mcp, mode="legacy", client_info=CRON) as client, anyio.create_task_group() as held:
            held.start_soon(client.call_tool, "saip_tools_set_exposure", EXPOSE)
            question = await eventually(lambda: one_waiting(url))
            assert (question["level"], question["client"], question["binds"]["tool"]) == (
                "DESTRUCTIVE",
                "nightly-cron 1",
                "saip_tools_set_exposure",
            )
            await saip(url, "approvals", "approve", question["id"], "--json")

        async def answered() -> dict[str, Any] | None:
            found = (await saip(url, "approvals", "--json"))["data"]["answered"]
            return found[0] if found else None

        answer = await eventually(answered)
        listed = await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(cli, ["--url", url, "--admin-token", ADMIN, "approvals"]).output
        )
        await eventually(lambda: [change.ended for change in changes][-1:] == ["answered"])
        group.cancel_scope.cancel()
    assert (answer["tool"], answer["decision"], answer["answeredVia"]) == ("saip_tools_set_exposure", "approved", "cli")
    assert answer["secondsToAnswer"] > 0 and answer["answeredAt"] >= answer["time"]
    assert "Recent answers:" in listed and "approved       cli" in listed
    # Asked, answered by the person through the command line, taken back by the call it answered.
    assert [(change.out_of_band, change.answer, change.answered_via, change.ended) for change in changes] == [
        (True, "", "", ""),
        (True, "approved", "cli", ""),
        (True, "approved", "cli", "answered"),
    ]
