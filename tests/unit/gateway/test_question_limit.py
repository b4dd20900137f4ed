"""Consent fatigue: past management.question-limit, a client's further questions are refused with a sentence that
tells the AI to batch its work; reads still run, and a 2026-07-28 answer is not a new question."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from saip.v1 import common_pb2
from tests.unit.gateway.probe import harness
from tests.unit.gateway.test_gate_through_sdk import CLIENT, ERAS, answering, call, envelope


@pytest.mark.parametrize("mode", ERAS)
async def test_questions_past_the_limit_are_refused_with_a_request_to_batch(tmp_path: Path, mode: str) -> None:
    h = harness(tmp_path, questions=2)
    questions: list[str] = []
    person = answering("accept", {"approve": ["run"]}, questions)
    await h.registrar.refresh()
    async with Client(h.server, mode=mode, client_info=CLIENT, elicitation_callback=person) as client:
        ran = [await client.call_tool("saip_probe_delete", {"name": f"n{index}"}) for index in range(2)]
        refused = await client.call_tool("saip_probe_delete", {"name": "n2"})
        read = await client.call_tool("saip_probe_read", {})
    assert isinstance(refused, types.CallToolResult) and isinstance(read, types.CallToolResult)
    assert all(isinstance(r, types.CallToolResult) and not r.is_error for r in ran)
    assert len(questions) == 2 and not read.is_error
    message = envelope(refused)["message"]
    assert message.startswith(
        "Tool 'saip_probe_delete' was not run: this client asked the person 2 questions within 60 s, the limit "
        "(management.question-limit). Batch your work: "
    )
    assert "Try again in " in message
    assert [run[0] for run in h.probe.runs] == ["saip_probe_delete", "saip_probe_delete", "saip_probe_read"]
    assert [record.outcome for record in h.audit.records] == [
        common_pb2.OUTCOME_OK,
        common_pb2.OUTCOME_OK,
        common_pb2.OUTCOME_REFUSED,
        common_pb2.OUTCOME_OK,
    ]


async def test_other_clients_may_still_ask(tmp_path: Path) -> None:
    h = harness(tmp_path, questions=1)
    questions: list[str] = []
    person = answering("accept", {"approve": ["run"]}, questions)
    first = await call(h, "legacy", "saip_probe_delete", {"name": "a"}, person)
    other = types.Implementation(name="other-client", version="1.0")
    await h.registrar.refresh()
    async with Client(h.server, mode="legacy", client_info=other, elicitation_callback=person) as client:
        second = await client.call_tool("saip_probe_delete", {"name": "b"})
    assert not first.is_error and isinstance(second, types.CallToolResult) and not second.is_error
    assert len(questions) == 2
