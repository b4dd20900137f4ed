"""The state of a parked proxied call's question (`surface.parked`): what the retry must bring back, read back only
as it was written, for the same call only; the gate's own state is not mistaken for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from saip.gateway.surface import parked
from saip.gateway.surface.approval import Answer, Decided, Decision
from saip.gateway.surface.audited import PublishedToolCall
from saip.gateway.surface.management import Caller
from saip.v1 import common_pb2


@dataclass
class _Retry:
    """A 2026-07-28 retry carrying a state (as the SDK hands it over, unsealed) and an answer."""

    state: str | None
    answer: Answer | None = None
    roundtrip: bool = True
    reports_progress: bool = False

    async def elicit(self, message: str, schema: dict[str, Any]) -> Answer:
        raise AssertionError("a retry is not asked anything")

    async def progress(self, done: float, total: float, message: str) -> None:
        return None


QUESTION = common_pb2.ServedQuestion(
    id=1,
    message="Upstream server 'painter' asks (through ask): Which colour?",
    requested_schema_json='{"type": "object", "properties": {"colour": {"type": "string"}}}',
    parked_id="holder.secret",
)


def _call(arguments: dict[str, Any]) -> PublishedToolCall:
    return PublishedToolCall("ask", Caller(elicitation=True), arguments, source="exposed")


def test_the_question_carries_the_parked_call_the_start_and_the_decision_back() -> None:
    call = _call({"text": "a"})
    call.decision = Decided(Decision.APPROVED, 2.5, via="client")
    asked = parked.question_of(call, QUESTION, 180, "180")
    state = parked.parked_state(_Retry(asked.state))  # type: ignore[arg-type]
    assert (asked.message, asked.schema["properties"], asked.relayed) == (
        QUESTION.message,
        {"colour": {"type": "string"}},
        True,
    )
    assert asked.deadline - asked.asked_at == 180
    assert asked.expired.startswith(
        "Tool 'ask' was not completed: nobody answered the upstream's question within 180 s"
    )
    assert state is not None
    assert (state.parked_id, state.nonce, state.started) == ("holder.secret", asked.nonce, call.started)
    assert state.decision == Decided(Decision.APPROVED, 2.5, via="client")
    assert state.binds(_call({"text": "a"})) and not state.binds(_call({"text": "b"}))


def test_only_a_parked_calls_own_state_is_read_as_one() -> None:
    gate_state = json.dumps({"v": 1, "t": "ask", "a": "x", "n": "n", "iat": 0, "exp": 1})
    broken = json.dumps({"parked": 1, "p": "holder.secret"})  # claims missing
    for state in (None, "not json", gate_state, broken, "[1]"):
        assert parked.parked_state(_Retry(state)) is None  # type: ignore[arg-type]
    first = parked.question_of(_call({}), QUESTION, 5, "5").state
    assert parked.parked_state(_Retry(first, roundtrip=False)) is None  # type: ignore[arg-type]


def test_the_answer_goes_to_the_parked_call_as_given_and_no_answer_is_a_cancel() -> None:
    accepted = parked.answer_of(_Retry("", Answer("accept", {"colour": "green"})))  # type: ignore[arg-type]
    assert (accepted.action, json.loads(accepted.content_json)) == ("accept", {"colour": "green"})
    assert parked.answer_of(_Retry("", Answer("decline"))).action == "decline"  # type: ignore[arg-type]
    assert parked.answer_of(_Retry("")).action == "cancel"  # type: ignore[arg-type]
