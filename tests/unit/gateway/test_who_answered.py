"""Who answered a question: a person at the client, the client by itself, or the person out of band.

Headless clients (`claude -p`, `codex exec`) advertise elicitation and answer a question themselves within about 20 ms:
a dismissal (`cancel`) is no decision, and an answer sooner than management.min-answer-ms is the client's own. With
out-of-band approvals on, either goes to the person's inbox, in both eras; off, a dismissal is a decline and the
client's own answer is DENIED, the sentence and the record (`answered_via`) saying the client answered."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.common.approval_form import INPUT_KEY
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface import pending
from saip.gateway.surface.questions import OutOfBand, Sweeper
from saip.v1 import common_pb2
from tests.unit.gateway.probe import Harness, MemoryQuestions, harness
from tests.waiting import eventually

CLIENT = types.Implementation(name="claude-code", version="2.1.328")
CAFE = {"name": "cafe"}
QUICK = 0.5  # management.min-answer-ms, in seconds: the default


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def answering(action: str, ticked: bool = True) -> Any:
    """A client that answers every question by itself, at once."""

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        content = {"approve": ["run"] if ticked else []} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return answer


def said(result: types.CallToolResult | types.InputRequiredResult) -> dict[str, Any]:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)  # type: ignore[no-any-return]


class Inbox:
    """The person's side over one replica's view of the store, as `/api/v1/approvals` reaches it."""

    def __init__(self, h: Harness, store: MemoryQuestions, clock: Callable[[], float]) -> None:
        self.view = Sweeper(
            store=store, nonces=h.nonces, sink=h.audit, metrics=GatewayMetrics(), replica="r", clock=clock
        )
        self.side = OutOfBand(store=store, sweeper=self.view, enabled=True, clock=clock)

    async def waiting(self) -> list[dict[str, Any]]:
        await self.view.follow()  # what the replica's watch keeps current
        return list((await self.side.waiting()).data["approvals"])

    async def approve(self, question_id: str, via: str) -> None:
        await self.side.answer(question_id, True, via)


async def inbox(h: Harness, store: MemoryQuestions, clock: Callable[[], float] = time.time) -> Inbox:
    await h.registrar.refresh()
    return Inbox(h, store, clock)


@pytest.mark.parametrize(
    ("action", "ticked", "answered"), [("accept", True, "accepted"), ("decline", False, "declined")]
)
async def test_an_answer_sooner_than_a_person_can_read_is_the_clients_and_denied(
    tmp_path: Path, action: str, ticked: bool, answered: str
) -> None:
    h = harness(tmp_path, wait=180, min_answer=QUICK)
    await h.registrar.refresh()
    async with Client(h.server, mode="legacy", client_info=CLIENT, elicitation_callback=answering(action, ticked)) as c:
        result = said(await c.call_tool("saip_probe_delete", CAFE))
    assert result["message"].startswith(
        "Tool 'saip_probe_delete' was not run: it needs human approval and this client answered the question by "
        f"itself (it {answered} it "
    )
    assert result["message"].endswith(
        "sooner than a person can read it), so no person decided. Do not retry it from this client; ask the user to "
        "run it from the app, or to answer the client's questions themselves."
    )
    [record] = h.audit.records
    assert (record.outcome, record.hitl, record.answered_via) == (
        common_pb2.OUTCOME_DENIED,
        common_pb2.HITL_DECISION_DENIED,
        "client-itself",
    )
    assert h.probe.runs == []


async def test_off_a_dismissal_that_took_a_person_s_time_is_a_decline(tmp_path: Path) -> None:
    h = harness(tmp_path, wait=180, min_answer=0.0)
    await h.registrar.refresh()
    async with Client(h.server, mode="legacy", client_info=CLIENT, elicitation_callback=answering("cancel")) as c:
        result = said(await c.call_tool("saip_probe_delete", CAFE))
    assert (
        result["message"]
        == "Tool 'saip_probe_delete' was not run: the user declined. Do not retry it for this request."
    )
    assert h.audit.records[0].answered_via == "client"


@pytest.mark.parametrize(("action", "quick"), [("cancel", 0.0), ("accept", QUICK)], ids=["dismissed", "too-quick"])
async def test_a_2025_11_25_call_no_person_decided_is_held_for_the_person(
    tmp_path: Path, action: str, quick: float
) -> None:
    store = MemoryQuestions()
    h = harness(tmp_path, wait=180, interval=0.05, pending=store, out_of_band=True, min_answer=quick)
    side = await inbox(h, store)
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    results: list[types.CallToolResult] = []
    async with (
        Client(h.server, mode="legacy", client_info=CLIENT, elicitation_callback=answering(action)) as client,
        anyio.create_task_group() as group,
    ):

        async def held() -> None:
            results.append(await client.call_tool("saip_probe_delete", CAFE, progress_callback=on_progress))

        group.start_soon(held)
        [question] = await eventually(lambda: side.waiting())
        assert (question["client"], question["held"], h.probe.runs) == ("claude-code 2.1.328", True, [])
        await eventually(lambda: progress)
        await side.approve(question["id"], "rest")
    assert said(results[0])["message"] == "saip_probe_delete ran"
    [record] = h.audit.records
    assert (record.outcome, record.hitl, record.answered_via) == (
        common_pb2.OUTCOME_OK,
        common_pb2.HITL_DECISION_APPROVED,
        "rest",
    )
    assert pending.state(store.entries[question["id"]][0], 0) == pending.ANSWERED


@pytest.mark.parametrize(("action", "quick"), [("cancel", 0.0), ("decline", QUICK)], ids=["dismissed", "too-quick"])
async def test_a_2026_07_28_question_no_person_decided_goes_back_until_the_person_answers(
    tmp_path: Path, action: str, quick: float
) -> None:
    store, clock = MemoryQuestions(), Clock()
    h = harness(tmp_path, wait=180, pending=store, out_of_band=True, min_answer=quick, clock=clock)
    side = await inbox(h, store, clock)
    answer = {INPUT_KEY: types.ElicitResult(action=action)}  # type: ignore[arg-type]
    async with Client(h.server, mode="auto", client_info=CLIENT, elicitation_callback=answering(action)) as client:
        first = await client.session.call_tool("saip_probe_delete", CAFE, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and await side.waiting() == []
        clock.now += 0.02  # the client answers by itself, at once
        again = await client.session.call_tool(
            "saip_probe_delete",
            CAFE,
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(again, types.InputRequiredResult)  # the same question again, its state sealed afresh
        [question] = await side.waiting()
        assert question["client"] == "claude-code 2.1.328" and h.probe.runs == []
        await side.approve(question["id"], "cli")
        ran = await client.session.call_tool(
            "saip_probe_delete", CAFE, input_responses=answer, request_state=again.request_state
        )
    assert said(ran)["message"] == "saip_probe_delete ran"
    assert h.audit.records[-1].answered_via == "cli"


async def test_a_2026_07_28_answer_that_took_a_person_s_time_is_the_person_s(tmp_path: Path) -> None:
    clock = Clock()
    h = harness(tmp_path, wait=180, pending=MemoryQuestions(), out_of_band=True, min_answer=QUICK, clock=clock)
    await h.registrar.refresh()
    approve = {INPUT_KEY: types.ElicitResult(action="accept", content={"approve": ["run"]})}
    async with Client(h.server, mode="auto", client_info=CLIENT, elicitation_callback=answering("accept")) as client:
        first = await client.session.call_tool("saip_probe_delete", CAFE, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        clock.now += 4.0  # a person read the question and clicked
        ran = await client.session.call_tool(
            "saip_probe_delete", CAFE, input_responses=approve, request_state=first.request_state
        )
    assert said(ran)["message"] == "saip_probe_delete ran"
    [record] = h.audit.records
    assert (record.answered_via, round(record.approval_seconds)) == ("client", 4)
    assert (record.caller.operator, record.caller.interface) == ("ai", "mcp")


async def test_a_held_question_whose_client_went_away_is_withdrawn_and_one_past_its_wait_expired(
    tmp_path: Path,
) -> None:
    store = MemoryQuestions()
    h = harness(tmp_path, wait=180, interval=0.05, pending=store, out_of_band=True)
    side = await inbox(h, store)
    async with Client(h.server, mode="legacy", client_info=CLIENT) as client, anyio.create_task_group() as group:
        group.start_soon(client.call_tool, "saip_probe_delete", CAFE)
        [question] = await eventually(lambda: side.waiting())
        group.cancel_scope.cancel()  # the client goes away
    gone = await eventually(lambda: pending.state(store.entries[question["id"]][0], 0) == pending.WITHDRAWN)
    assert gone and await side.waiting() == []

    short = harness(tmp_path, wait=0.2, interval=0.05, pending=store, out_of_band=True)
    await short.registrar.refresh()
    async with Client(short.server, mode="legacy", client_info=CLIENT) as client:
        timed_out = said(await client.call_tool("saip_probe_delete", {"name": "tea"}))
    assert timed_out["message"].startswith("Tool 'saip_probe_delete' was not run: no approval within 0.2 s.")
    expired = [entry for entry, _ in store.entries.values() if entry.held and entry.ended == pending.EXPIRED]
    assert len(expired) == 1
