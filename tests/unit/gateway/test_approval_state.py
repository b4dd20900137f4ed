"""2026-07-28 approvals: the sealed state binds tool, arguments, a one-shot nonce and an expiry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from saip.v1 import common_pb2
from tests.unit.gateway.probe import Harness, harness

CLIENT = types.Implementation(name="probe-client", version="9.9")
APPROVE = {"approval": types.ElicitResult(action="accept", content={"approve": ["run"]})}


async def ask(client: Client, tool: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    first = await client.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    return first


def message(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return str(json.loads(block.text)["message"])


async def never_asked(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("these tests answer by hand through the session")


async def connected(h: Harness) -> Client:
    """A 2026-07-28 client that advertises elicitation; the tests drive the retry themselves."""
    await h.registrar.refresh()
    return Client(h.server, mode="auto", client_info=CLIENT, elicitation_callback=never_asked)


async def test_the_question_carries_the_exact_text_and_a_sealed_state(tmp_path: Path) -> None:
    h = harness(tmp_path, wait=180)
    async with await connected(h) as client:
        first = await ask(client, "saip_probe_delete", {"name": "cafe"})
    assert first.input_requests is not None
    request = first.input_requests["approval"]
    assert isinstance(request, types.ElicitRequest)
    assert isinstance(request.params, types.ElicitRequestFormParams)
    assert request.params.message == (
        "[DESTRUCTIVE] probe-client 9.9 wants to run saip_probe_delete: act on 'cafe' 1 time(s). "
        "Answer within 180 s, or the call is refused."
    )
    schema = request.params.requested_schema
    assert schema["required"] == ["approve"]
    assert schema["properties"]["approve"]["default"] == ["run"]
    # Sealed: the client sees an opaque token, not the nonce or the tool.
    assert first.request_state is not None and "saip_probe_delete" not in first.request_state
    assert h.probe.runs == [] and h.audit.records == []


async def test_a_replayed_answer_is_refused_and_the_call_runs_once(tmp_path: Path) -> None:
    h = harness(tmp_path)
    async with await connected(h) as client:
        first = await ask(client, "saip_probe_delete", {"name": "cafe"})
        answered = await client.session.call_tool(
            "saip_probe_delete", {"name": "cafe"}, input_responses=APPROVE, request_state=first.request_state
        )
        replayed = await client.session.call_tool(
            "saip_probe_delete", {"name": "cafe"}, input_responses=APPROVE, request_state=first.request_state
        )
    assert isinstance(answered, types.CallToolResult) and not answered.is_error
    assert message(replayed) == (
        "Tool 'saip_probe_delete' was not run: this approval was already used. "
        "Call the tool again to ask the user afresh."
    )
    assert len(h.probe.runs) == 1
    assert [r.outcome for r in h.audit.records] == [common_pb2.OUTCOME_OK, common_pb2.OUTCOME_REFUSED]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        pytest.param("saip_probe_delete", {"name": "other"}, id="other-arguments"),
        pytest.param("saip_probe_write", {"name": "cafe"}, id="other-tool"),
    ],
)
async def test_an_answer_moved_to_another_call_is_refused(tmp_path: Path, tool: str, arguments: dict[str, Any]) -> None:
    h = harness(tmp_path)
    async with await connected(h) as client:
        first = await ask(client, "saip_probe_delete", {"name": "cafe"})
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(tool, arguments, input_responses=APPROVE, request_state=first.request_state)
    assert h.probe.runs == []


async def test_a_forged_state_is_refused(tmp_path: Path) -> None:
    h = harness(tmp_path)
    forged = json.dumps({"v": 1, "t": "saip_probe_delete", "a": "x", "n": "n", "iat": 0, "exp": 9e12})
    async with await connected(h) as client:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "saip_probe_delete", {"name": "cafe"}, input_responses=APPROVE, request_state=forged
            )
    assert h.probe.runs == []


async def test_a_retry_without_an_answer_is_a_decline(tmp_path: Path) -> None:
    h = harness(tmp_path)
    async with await connected(h) as client:
        first = await ask(client, "saip_probe_delete", {"name": "cafe"})
        retried = await client.session.call_tool(
            "saip_probe_delete", {"name": "cafe"}, input_responses={}, request_state=first.request_state
        )
    assert message(retried).startswith("Tool 'saip_probe_delete' was not run: the user declined.")
    assert h.probe.runs == []
