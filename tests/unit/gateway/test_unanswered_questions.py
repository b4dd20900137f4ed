"""2026-07-28 questions nobody answers are recorded as TIMEOUT once, by one replica's sweeper; an answer settles its
question first, so a question is recorded once whatever comes first. The store is an in-memory fake with the
bucket's compare-and-set; two sweepers over it stand for two replicas."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types

from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.questions import Sweeper
from saip.v1 import common_pb2
from tests.unit.gateway.probe import Harness, MemoryQuestions, RecordingAudit, SpentNonces, harness
from tests.unit.gateway.test_approval_state import APPROVE, ask, connected, message

WAIT = 180.0
TIMEOUT = (
    "Tool 'saip_probe_delete' was not run: no approval within 180 s. Do not retry it for this request; ask the user "
    "to run it from the app if it is still needed."
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def replica(store: MemoryQuestions, audit: RecordingAudit, clock: Clock, name: str) -> Sweeper:
    return Sweeper(store=store, nonces=SpentNonces(), sink=audit, metrics=GatewayMetrics(), replica=name, clock=clock)


async def swept(*sweepers: Sweeper) -> None:
    """Each replica reads the bucket, then each sweeps (both having read before either claims: the race)."""
    for sweeper in sweepers:
        await sweeper.follow()
    for sweeper in sweepers:
        await sweeper.sweep()


async def asked(h: Harness) -> types.InputRequiredResult:
    async with await connected(h) as client:
        return await ask(client, "saip_probe_delete", {"name": "cafe"})


async def answer(h: Harness, first: types.InputRequiredResult) -> str:
    async with await connected(h) as client:
        result = await client.session.call_tool(
            "saip_probe_delete", {"name": "cafe"}, input_responses=APPROVE, request_state=first.request_state
        )
    return message(result)


async def test_an_unanswered_question_is_recorded_as_timeout_once_by_one_of_two_replicas(tmp_path: Path) -> None:
    store, clock = MemoryQuestions(), Clock()
    h = harness(tmp_path, wait=WAIT, pending=store, clock=clock)
    first = await asked(h)
    assert h.audit.records == [] and len(store.entries) == 1
    one, two = replica(store, h.audit, clock, "one"), replica(store, h.audit, clock, "two")

    await swept(one, two)  # within the wait: nothing yet
    assert h.audit.records == []
    clock.now += WAIT + 1
    await swept(one, two)
    await swept(two, one)

    [record] = h.audit.records
    assert (record.outcome, record.hitl, record.tool) == (
        common_pb2.OUTCOME_TIMEOUT,
        common_pb2.HITL_DECISION_TIMEOUT,
        "saip_probe_delete",
    )
    assert record.result == TIMEOUT and record.approval_seconds == WAIT
    assert (one.recorded, two.recorded) == (1, 0)
    # A late answer is refused as expired, and records nothing more.
    assert await answer(h, first) == TIMEOUT
    assert len(h.audit.records) == 1 and h.probe.runs == []


async def test_an_answered_question_is_settled_and_never_swept(tmp_path: Path) -> None:
    store, clock = MemoryQuestions(), Clock()
    h = harness(tmp_path, wait=WAIT, pending=store, clock=clock)
    first = await asked(h)
    assert await answer(h, first) == "saip_probe_delete ran"
    clock.now += WAIT + 1
    one = replica(store, h.audit, clock, "one")
    await swept(one)
    assert [record.outcome for record in h.audit.records] == [common_pb2.OUTCOME_OK]
    assert one.recorded == 0


async def test_an_answer_that_comes_after_the_wait_and_before_any_sweep_records_the_timeout_itself(
    tmp_path: Path,
) -> None:
    store, clock = MemoryQuestions(), Clock()
    h = harness(tmp_path, wait=WAIT, pending=store, clock=clock)
    first = await asked(h)
    clock.now += WAIT + 1
    assert await answer(h, first) == TIMEOUT
    one = replica(store, h.audit, clock, "one")
    await swept(one)
    assert [record.outcome for record in h.audit.records] == [common_pb2.OUTCOME_TIMEOUT]
    assert one.recorded == 0 and h.probe.runs == []
