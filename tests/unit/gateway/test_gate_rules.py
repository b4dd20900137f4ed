"""The gate's decision table and the rules that refuse before anything runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from saip.common.approval_sentences import management_question
from saip.gateway.config import ApprovalMode
from saip.gateway.errors import ServiceRefused
from saip.gateway.surface.approval import Answer
from saip.gateway.surface.gate import Need, need_for
from saip.gateway.surface.management import Approval, Caller, Level
from saip.v1 import common_pb2
from tests.unit.gateway.probe import NoInteraction, harness

R, W, D = Level.READ, Level.WRITE, Level.DESTRUCTIVE
DESTRUCTIVE, ALL, NONE = ApprovalMode.DESTRUCTIVE, ApprovalMode.ALL, ApprovalMode.NONE


@pytest.mark.parametrize(
    ("level", "mode", "expected"),
    [
        (R, DESTRUCTIVE, Need.RUN),
        (R, ALL, Need.RUN),
        (R, NONE, Need.RUN),
        (W, DESTRUCTIVE, Need.RUN),
        (W, ALL, Need.ASK),
        (W, NONE, Need.RUN),
        (D, DESTRUCTIVE, Need.ASK),
        (D, ALL, Need.ASK),
        (D, NONE, Need.RUN),
    ],
)
def test_the_mode_table(level: Level, mode: ApprovalMode, expected: Need) -> None:
    assert need_for(Approval(level, "x"), mode) is expected


@pytest.mark.parametrize("level", [R, W, D])
@pytest.mark.parametrize(("mode", "expected"), [(DESTRUCTIVE, Need.ASK), (ALL, Need.ASK), (NONE, Need.REFUSE)])
def test_high_risk_overrides_the_mode(level: Level, mode: ApprovalMode, expected: Need) -> None:
    assert need_for(Approval(level, "x", high_risk=True), mode) is expected


def test_the_question_text() -> None:
    caller = Caller(client_name="claude-code", client_version="2.1.314")
    summary = "publish 'weather' (L3, strict)."
    assert management_question(D.value, caller.label, "saip_tools_publish", summary, 180) == (
        "[DESTRUCTIVE] claude-code 2.1.314 wants to run saip_tools_publish: publish 'weather' (L3, strict). "
        "Answer within 180 s, or the call is refused."
    )
    question = management_question(W.value, Caller().label, "saip_x", "y", 2.5)
    assert question.startswith("[WRITE] an unidentified client wants to run saip_x")


async def test_the_app_own_chat_is_refused_before_anything_runs(tmp_path: Path) -> None:
    h = harness(tmp_path)
    [read] = [t for t in h.probe.tools() if t.name == "saip_probe_read"]
    result = await h.gate.execute(read, {}, Caller(client_name="saip-chat", loopback=True), NoInteraction())  # type: ignore[arg-type]
    assert result.envelope is not None
    assert (
        result.envelope["message"] == "Tool 'saip_probe_read' was not run: it is not available to this app's own chat."
    )
    assert h.probe.runs == []
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_REFUSED
    assert h.audit.records[0].caller.loopback


async def test_audit_record_masks_secrets_in_arguments(tmp_path: Path) -> None:
    h = harness(tmp_path, mode=NONE)
    [write] = [t for t in h.probe.tools() if t.name == "saip_probe_write"]
    await h.gate.execute(
        write,
        {"name": "Bearer sk-abcdefghijkl", "count": 1},
        Caller(client_name="c", elicitation=True),
        NoInteraction(),  # type: ignore[arg-type]
    )
    record = h.audit.records[0]
    assert json.loads(record.arguments) == {"count": 1, "name": "Bearer ***"}
    assert "sk-abcdefghijkl" not in record.summary


class _Asked(NoInteraction):
    """An interaction that records the question and approves it."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    async def elicit(self, message: str, schema: dict[str, object]) -> object:
        self.questions.append(message)
        return Answer("accept", {"approve": ["run"]})

    async def progress(self, done: float, total: float, message: str) -> None:
        return None


async def test_a_plan_read_from_the_owning_service_is_awaited_and_quoted(tmp_path: Path) -> None:
    h = harness(tmp_path)
    [write] = [t for t in h.probe.tools() if t.name == "saip_probe_write"]

    async def plan(arguments: object) -> Approval:
        return Approval(Level.WRITE, "run 'weather' in the sandbox: risk L3, network strict", high_risk=True)

    planned = dataclasses.replace(write, planner=plan)
    asked = _Asked()
    result = await h.gate.execute(planned, {"name": "weather"}, Caller(client_name="c", elicitation=True), asked)  # type: ignore[arg-type]
    assert result.envelope is not None and result.envelope["ok"] is True
    assert asked.questions[0].startswith("[WRITE] c wants to run saip_probe_write: run 'weather' in the sandbox")
    assert h.audit.records[0].high_risk


async def test_a_plan_the_owning_service_refuses_is_an_error_and_nobody_is_asked(tmp_path: Path) -> None:
    h = harness(tmp_path)
    [delete] = [t for t in h.probe.tools() if t.name == "saip_probe_delete"]

    async def plan(arguments: object) -> Approval:
        raise ServiceRefused("No tool named 'ghost'. Call saip_tools_list for the tools there are.")

    planned = dataclasses.replace(delete, planner=plan)
    result = await h.gate.execute(
        planned, {"name": "ghost"}, Caller(client_name="c", elicitation=True), NoInteraction()
    )  # type: ignore[arg-type]
    assert result.envelope is not None
    assert result.envelope["message"] == "No tool named 'ghost'. Call saip_tools_list for the tools there are."
    assert h.probe.runs == []
    assert (h.audit.records[0].outcome, h.audit.records[0].hitl) == (
        common_pb2.OUTCOME_ERROR,
        common_pb2.HITL_DECISION_UNSPECIFIED,
    )
