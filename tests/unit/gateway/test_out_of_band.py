"""Out-of-band approvals (management.out-of-band-approvals): a question to a client that cannot ask is parked for the
person with the same text, and the call runs only once they approved: held with progress (2025-11-25), or retried
(2026-07-28). Off, such a call is DENIED, as the seed says. The store is the in-memory fake of saip-questions."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from saip.common.approval_form import arguments_hash
from saip.gateway.errors import ServiceRefused
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import new_nonce
from saip.gateway.surface.questions import OutOfBand, Sweeper
from saip.v1 import common_pb2
from tests.unit.gateway.probe import Harness, MemoryQuestions, harness
from tests.waiting import eventually

CLIENT = types.Implementation(name="cron-job", version="2")
CAFE = {"name": "cafe"}
QUESTION = (
    "[DESTRUCTIVE] cron-job 2 wants to run saip_probe_delete: act on 'cafe' 1 time(s). Answer within 180 s, or the "
    "call is refused."
)


class Person:
    """The person's side, as the REST API and `saip approvals` reach it, over one replica's view of the store."""

    def __init__(self, h: Harness, store: MemoryQuestions) -> None:
        self.view = Sweeper(store=store, nonces=h.nonces, sink=h.audit, metrics=GatewayMetrics(), replica="r")
        self.side = OutOfBand(store=store, sweeper=self.view, enabled=True)

    async def waiting(self) -> list[dict[str, Any]]:
        await self.view.follow()  # what the replica's watch keeps current
        return list((await self.side.waiting()).data["approvals"])

    async def answer(self, question_id: str, approve: bool) -> str:
        return (await self.side.answer(question_id, approve, "cli")).message


def said(result: types.CallToolResult | types.InputRequiredResult) -> dict[str, Any]:
    assert isinstance(result, types.CallToolResult)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("era", ["legacy", "auto"], ids=["2025-11-25", "2026-07-28"])
async def test_off_a_client_that_cannot_ask_is_denied(tmp_path: Path, era: str) -> None:
    h = harness(tmp_path, wait=180, pending=MemoryQuestions())
    await h.registrar.refresh()
    async with Client(h.server, mode=era, client_info=CLIENT) as client:
        result = await client.call_tool("saip_probe_delete", {"name": "cafe"})
    assert said(result)["message"].startswith("Tool 'saip_probe_delete' was not run: it needs human approval")
    assert h.audit.records[0].outcome == common_pb2.OUTCOME_DENIED and h.probe.runs == []


async def test_a_2025_11_25_call_is_held_until_the_person_approves_out_of_band(tmp_path: Path) -> None:
    store = MemoryQuestions()
    h = harness(tmp_path, wait=180, interval=0.05, pending=store, out_of_band=True)
    side = Person(h, store)
    await h.registrar.refresh()
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    results: list[types.CallToolResult] = []
    async with Client(h.server, mode="legacy", client_info=CLIENT) as client, anyio.create_task_group() as group:

        async def held() -> None:
            results.append(await client.call_tool("saip_probe_delete", {"name": "cafe"}, progress_callback=on_progress))

        group.start_soon(held)
        [question] = await eventually(side.waiting)
        assert (question["question"], question["tool"], question["held"]) == (QUESTION, "saip_probe_delete", True)
        assert (question["level"], question["binds"]["argumentsHash"]) == ("DESTRUCTIVE", arguments_hash(CAFE))
        await eventually(lambda: len(progress) >= 2)
        assert h.probe.runs == []
        answered = await side.answer(question["id"], approve=True)
        # The answering replica's listing leaves it out at once, before its watch brings the change.
        assert (await side.side.waiting()).data["approvals"] == []
    assert answered == "Approved saip_probe_delete for cron-job 2: it runs now."
    assert said(results[0])["message"] == "saip_probe_delete ran"
    assert progress[0].startswith("Waiting for approval:")
    [record] = h.audit.records
    assert (record.outcome, record.hitl, record.answered_via) == (
        common_pb2.OUTCOME_OK,
        common_pb2.HITL_DECISION_APPROVED,
        "cli",  # the person answered, through the command line
    )
    assert await side.waiting() == []
    with pytest.raises(ServiceRefused, match="is waiting for an answer"):
        await side.answer(question["id"], approve=False)


async def modern(tmp_path: Path) -> tuple[Harness, Person]:
    store = MemoryQuestions()
    h = harness(tmp_path, wait=180, pending=store, out_of_band=True)
    await h.registrar.refresh()
    return h, Person(h, store)


async def delete_cafe(client: Client, state: str | None = None) -> types.CallToolResult | types.InputRequiredResult:
    """saip_probe_delete from a 2026-07-28 client that cannot ask: first without a state, then retried with it."""
    arguments = {"name": "cafe"}
    return await client.session.call_tool(
        "saip_probe_delete", arguments, request_state=state, allow_input_required=True
    )


async def test_a_2026_07_28_client_retries_until_the_person_answers_out_of_band(tmp_path: Path) -> None:
    h, side = await modern(tmp_path)
    async with Client(h.server, mode="auto", client_info=CLIENT) as client:
        first = await delete_cafe(client)
        assert isinstance(first, types.InputRequiredResult)
        [question] = await side.waiting()
        assert (question["question"], question["held"]) == (QUESTION, False)
        assert (question["level"], question["binds"]["argumentsHash"]) == ("DESTRUCTIVE", arguments_hash(CAFE))

        again = await delete_cafe(client, first.request_state)
        assert isinstance(again, types.InputRequiredResult) and h.probe.runs == []

        await side.answer(question["id"], approve=False)
        declined = await delete_cafe(client, again.request_state)
    assert said(declined)["message"] == (
        "Tool 'saip_probe_delete' was not run: the user declined. Do not retry it for this request."
    )
    [record] = h.audit.records
    assert (record.outcome, record.hitl, record.answered_via) == (
        common_pb2.OUTCOME_DECLINED,
        common_pb2.HITL_DECISION_DECLINED,
        "cli",
    )
    assert h.probe.runs == []


async def test_a_2026_07_28_out_of_band_approval_runs_the_call_once(tmp_path: Path) -> None:
    h, side = await modern(tmp_path)
    async with Client(h.server, mode="auto", client_info=CLIENT) as client:
        first = await delete_cafe(client)
        assert isinstance(first, types.InputRequiredResult)
        [question] = await side.waiting()
        await side.answer(question["id"], approve=True)
        ran = await delete_cafe(client, first.request_state)
        replayed = await delete_cafe(client, first.request_state)
    assert said(ran)["message"] == "saip_probe_delete ran"
    assert said(replayed)["message"].endswith(
        "this approval was already used. Call the tool again to ask the user afresh."
    )
    assert len(h.probe.runs) == 1


def test_a_question_id_can_be_typed_after_saip_approvals_approve() -> None:
    """The id is what the person types after `saip approvals approve`; one that starts with a dash (a URL-safe token
    does, one time in 64) reads as an option there ("No such option '-2'"), so ids are hex."""
    ids = [new_nonce() for _ in range(256)]
    assert all(len(i) == 32 and set(i) <= set(string.hexdigits) for i in ids)
