"""The approval gate end to end through the MCP SDK's in-process client, in both protocol eras."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.gateway.config import ApprovalMode
from saip.v1 import common_pb2
from tests.results import envelope
from tests.unit.gateway.probe import Harness, harness
from tests.waiting import eventually

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="probe-client", version="9.9")

Elicit = Callable[[ClientRequestContext, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def answering(action: str, content: dict[str, Any] | None, questions: list[str]) -> Elicit:
    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        questions.append(params.message)
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return answer


async def call(
    h: Harness, mode: str, tool: str, arguments: dict[str, Any], elicit: Elicit | None
) -> types.CallToolResult:
    await h.registrar.refresh()
    async with Client(h.server, mode=mode, client_info=CLIENT, elicitation_callback=elicit) as client:
        result = await client.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult)
    return result


@pytest.mark.parametrize("mode", ERAS)
async def test_read_runs_without_a_question(tmp_path: Path, mode: str) -> None:
    h = harness(tmp_path)
    questions: list[str] = []
    result = await call(h, mode, "saip_probe_read", {}, answering("accept", {"approve": ["run"]}, questions))
    assert envelope(result) == {
        "ok": True,
        "message": "saip_probe_read ran",
        "persisted": True,
        "restartRequired": False,
        "warnings": [],
        "data": {"tool": "saip_probe_read"},
    }
    assert not result.is_error
    assert questions == []
    [record] = h.audit.records
    assert (record.tool, record.outcome, record.level) == (
        "saip_probe_read",
        common_pb2.OUTCOME_OK,
        common_pb2.APPROVAL_LEVEL_READ,
    )
    assert record.hitl == common_pb2.HITL_DECISION_UNSPECIFIED
    assert (record.caller.client_name, record.caller.client_version) == ("probe-client", "9.9")


@pytest.mark.parametrize("mode", ERAS)
async def test_accepted_destructive_call_runs_after_the_exact_question(tmp_path: Path, mode: str) -> None:
    h = harness(tmp_path, wait=180)
    questions: list[str] = []
    result = await call(
        h, mode, "saip_probe_delete", {"name": "cafe"}, answering("accept", {"approve": ["run"]}, questions)
    )
    assert envelope(result)["ok"] is True
    assert questions == [
        "[DESTRUCTIVE] probe-client 9.9 wants to run saip_probe_delete: act on 'cafe' 1 time(s). "
        "Answer within 180 s, or the call is refused."
    ]
    assert [run[0] for run in h.probe.runs] == ["saip_probe_delete"]
    [record] = h.audit.records
    assert record.outcome == common_pb2.OUTCOME_OK
    assert record.hitl == common_pb2.HITL_DECISION_APPROVED
    assert record.summary == "act on 'cafe' 1 time(s)"


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("action", "content"),
    [
        pytest.param("decline", None, id="decline"),
        pytest.param("accept", {"approve": []}, id="untick"),
        pytest.param("accept", {}, id="empty-form"),
        pytest.param("cancel", None, id="cancel"),
    ],
)
async def test_declined_destructive_call_is_not_run(
    tmp_path: Path, mode: str, action: str, content: dict[str, Any] | None
) -> None:
    h = harness(tmp_path)
    result = await call(h, mode, "saip_probe_delete", {"name": "cafe"}, answering(action, content, []))
    assert result.is_error
    assert envelope(result)["message"] == (
        "Tool 'saip_probe_delete' was not run: the user declined. Do not retry it for this request."
    )
    assert envelope(result)["ok"] is False
    assert h.probe.runs == []
    [record] = h.audit.records
    assert (record.outcome, record.hitl) == (common_pb2.OUTCOME_DECLINED, common_pb2.HITL_DECISION_DECLINED)


@pytest.mark.parametrize("mode", ERAS)
async def test_client_without_elicitation_is_denied(tmp_path: Path, mode: str) -> None:
    h = harness(tmp_path)
    result = await call(h, mode, "saip_probe_delete", {"name": "cafe"}, None)
    message = envelope(result)["message"]
    assert message.startswith(
        "Tool 'saip_probe_delete' was not run: it needs human approval and this client cannot ask for it "
        "(no elicitation support)."
    )
    assert h.probe.runs == []
    [record] = h.audit.records
    assert (record.outcome, record.hitl) == (common_pb2.OUTCOME_DENIED, common_pb2.HITL_DECISION_DENIED)
    assert not record.caller.elicitation


async def test_unanswered_question_times_out_after_reporting_the_wait(tmp_path: Path) -> None:
    h = harness(tmp_path, wait=0.6, interval=0.2)
    progress: list[tuple[float, float | None, str | None]] = []

    async def never(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        await anyio.sleep_forever()  # the person never answers: the gate's wait ends the call
        raise AssertionError("the gate should have stopped waiting")

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    await h.registrar.refresh()
    async with Client(h.server, mode=LEGACY, client_info=CLIENT, elicitation_callback=never) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("saip_probe_delete", {"name": "cafe"}, progress_callback=on_progress)
    assert envelope(result)["message"] == (
        "Tool 'saip_probe_delete' was not run: no approval within 0.6 s. Do not retry it for this request; "
        "ask the user to run it from the app if it is still needed."
    )
    assert h.probe.runs == []
    assert progress[0] == (pytest.approx(0, abs=0.1), 0.6, "Waiting for approval: 1 s left")
    assert all(message and message.startswith("Waiting for approval: ") for _, _, message in progress)
    [record] = h.audit.records
    assert (record.outcome, record.hitl) == (common_pb2.OUTCOME_TIMEOUT, common_pb2.HITL_DECISION_TIMEOUT)


async def test_a_waiting_question_reports_progress_every_interval(tmp_path: Path) -> None:
    # The person answers only once three reports arrived: the count rests on events, not on how fast this machine is.
    h = harness(tmp_path, wait=30, interval=0.05)
    progress: list[tuple[float, float | None, str | None]] = []
    three = anyio.Event()

    async def after_three_reports(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        with anyio.fail_after(10):
            await three.wait()
        return types.ElicitResult(action="decline")

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))
        if len(progress) >= 3:
            three.set()

    await h.registrar.refresh()
    async with Client(h.server, mode=LEGACY, client_info=CLIENT, elicitation_callback=after_three_reports) as client:
        result = await client.call_tool("saip_probe_delete", {"name": "cafe"}, progress_callback=on_progress)
    assert envelope(result)["message"].startswith("Tool 'saip_probe_delete' was not run: the user declined.")
    assert len(progress) >= 3
    assert [total for _, total, _ in progress[:3]] == [30, 30, 30]
    assert [done for done, _, _ in progress] == sorted(done for done, _, _ in progress)
    assert progress[0][2] == "Waiting for approval: 30 s left"
    assert all(message and message.startswith("Waiting for approval: ") for _, _, message in progress)


async def test_late_answer_in_the_modern_era_times_out(tmp_path: Path) -> None:
    clock = [1_000.0]
    h = harness(tmp_path, wait=0.2, clock=lambda: clock[0])

    async def late(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        clock[0] += 0.4  # the person answers after the wait the question gave them
        return types.ElicitResult(action="accept", content={"approve": ["run"]})

    result = await call(h, MODERN, "saip_probe_delete", {"name": "cafe"}, late)
    assert envelope(result)["message"].startswith("Tool 'saip_probe_delete' was not run: no approval within 0.2 s.")
    assert h.probe.runs == []
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_TIMEOUT


@pytest.mark.parametrize(
    ("mode", "tool", "asks"),
    [
        (ApprovalMode.DESTRUCTIVE, "saip_probe_write", False),
        (ApprovalMode.ALL, "saip_probe_write", True),
        (ApprovalMode.NONE, "saip_probe_delete", False),
        (ApprovalMode.DESTRUCTIVE, "saip_probe_risky", True),
    ],
)
async def test_the_approval_mode_decides_who_asks(tmp_path: Path, mode: ApprovalMode, tool: str, asks: bool) -> None:
    h = harness(tmp_path, mode=mode)
    questions: list[str] = []
    result = await call(h, LEGACY, tool, {"name": "x"}, answering("accept", {"approve": ["run"]}, questions))
    assert envelope(result)["ok"] is True
    assert bool(questions) is asks


async def test_high_risk_action_under_none_is_refused_outright(tmp_path: Path) -> None:
    h = harness(tmp_path, mode=ApprovalMode.NONE)
    result = await call(h, LEGACY, "saip_probe_risky", {"name": "x"}, answering("accept", {"approve": ["run"]}, []))
    assert envelope(result)["message"] == (
        "Tool 'saip_probe_risky' was not run: this is a high-risk action and needs a human decision, but approval is "
        "disabled (management.approval=none). Ask the user to run it from the app."
    )
    assert h.probe.runs == []
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_REFUSED
    assert h.audit.records[0].high_risk


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"name": "x", "extra": 1}, "unknown property 'extra'"),
        ({}, "'name' is required"),
        ({"name": "x", "count": "2"}, "'count': Input should be a valid integer"),
        ({"name": "x", "count": 99}, "'count': Input should be less than or equal to 10"),
    ],
)
async def test_arguments_are_bound_strictly(tmp_path: Path, mode: str, arguments: dict[str, Any], problem: str) -> None:
    h = harness(tmp_path)
    result = await call(h, mode, "saip_probe_write", arguments, answering("accept", {"approve": ["run"]}, []))
    message = envelope(result)["message"]
    assert message.startswith(f"Invalid arguments for 'saip_probe_write': {problem}")
    assert h.probe.runs == []
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_REFUSED


async def test_service_refusal_is_an_error_naming_the_rule(tmp_path: Path) -> None:
    h = harness(tmp_path)
    result = await call(h, LEGACY, "saip_probe_refuse", {"name": "x"}, None)
    assert envelope(result)["message"] == (
        "'cafe-desk' is managed by configuration; change it under tools.cafe-desk instead."
    )
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_ERROR


async def test_unexpected_failure_is_masked(tmp_path: Path) -> None:
    h = harness(tmp_path)
    result = await call(h, LEGACY, "saip_probe_crash", {"name": "x"}, None)
    message = envelope(result)["message"]
    assert message == "Unexpected error: boom with Authorization: Bearer ***"
    assert "sk-live" not in h.audit.records[0].result


@pytest.mark.parametrize("mode", ERAS)
async def test_annotations_follow_the_level(tmp_path: Path, mode: str) -> None:
    h = harness(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server, mode=mode, client_info=CLIENT) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    read = tools["saip_probe_read"].annotations
    write = tools["saip_probe_write"].annotations
    delete = tools["saip_probe_delete"].annotations
    assert read is not None and write is not None and delete is not None
    assert (read.read_only_hint, read.destructive_hint) == (True, False)
    assert (write.read_only_hint, write.destructive_hint) == (False, False)
    assert (delete.read_only_hint, delete.destructive_hint) == (False, True)
    schema = tools["saip_probe_write"].input_schema
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]


async def test_a_client_that_goes_away_while_asked_leaves_an_abandoned_record(tmp_path: Path) -> None:
    h = harness(tmp_path, wait=30)
    asked = anyio.Event()

    async def hold(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    await h.registrar.refresh()
    async with Client(h.server, mode=LEGACY, client_info=CLIENT, elicitation_callback=hold) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "saip_probe_delete", {"name": "cafe"})
            with anyio.fail_after(5):
                await asked.wait()
            group.cancel_scope.cancel()  # the client gives up: the SDK cancels the request on the server
        await eventually(lambda: h.audit.records, within=5)  # written by the server's cancelled task
    assert h.probe.runs == []
    [record] = h.audit.records
    assert (record.outcome, record.hitl) == (common_pb2.OUTCOME_ERROR, common_pb2.HITL_DECISION_ELICIT_FAILED)
    assert record.result == "Tool 'saip_probe_delete' was not completed: the client went away before the call finished."
