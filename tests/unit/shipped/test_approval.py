"""The shipped server's 2026-07-28 approval round trip: the question carries a state bound to the call, and only the
retry of that very call, with an approving answer a person could have given (no sooner than min-answer-ms), runs it,
once."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from saip.common.approval_form import APPROVAL_SCHEMA, INPUT_KEY, arguments_hash
from saip.common.approval_sentences import ANSWERED_ITSELF, MISMATCH, REPLAYED
from saip.shipped.approval import Gate

READS = 2.0  # a person's time over the question, past the default min-answer-ms (0.5 s)


class Clock:
    """The gate's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def call(arguments: dict[str, Any], state: str | None = None, answer: types.ElicitResult | None = None) -> Any:
    return types.CallToolRequestParams(
        name="notes_echo",
        arguments=arguments,
        request_state=state,
        input_responses={INPUT_KEY: answer} if answer is not None else None,
    )


def approving(ticked: bool = True) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": ["run"] if ticked else []})  # type: ignore[arg-type]


def text_of(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and result.is_error
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_only_the_approved_retry_of_the_same_call_runs_and_only_once() -> None:
    clock = Clock()
    gate = Gate(wait=30, clock=clock)
    asked = gate.roundtrip(call({"text": "hi"}), "the question")
    clock.now += READS
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state
    request = asked.input_requests[INPUT_KEY]
    assert isinstance(request, types.ElicitRequest)
    assert request.params.message == "the question"
    assert request.params.requested_schema == APPROVAL_SCHEMA  # type: ignore[union-attr]
    state = asked.request_state

    assert text_of(gate.roundtrip(call({"text": "rm"}, state, approving()), "q")) == MISMATCH.format(tool="notes_echo")
    assert gate.roundtrip(call({"text": "hi"}, state, approving()), "q") is None
    assert text_of(gate.roundtrip(call({"text": "hi"}, state, approving()), "q")) == REPLAYED.format(tool="notes_echo")


def test_an_unticked_or_declined_answer_declines() -> None:
    clock = Clock()
    gate = Gate(wait=30, clock=clock)
    for answer in (approving(ticked=False), types.ElicitResult(action="decline"), types.ElicitResult(action="cancel")):
        asked = gate.roundtrip(call({"text": "hi"}), "q")
        assert isinstance(asked, types.InputRequiredResult)
        clock.now += READS
        declined = gate.roundtrip(call({"text": "hi"}, asked.request_state, answer), "q")
        # The seed's sentence, as the gateway says it: one module writes every outcome (issue 30, defect 6).
        assert (
            text_of(declined) == "Tool 'notes_echo' was not run: the user declined. Do not retry it for this request."
        )


def test_an_answer_sooner_than_min_answer_is_the_clients_own_and_runs_nothing() -> None:
    clock = Clock()
    gate = Gate(wait=30, clock=clock)
    asked = gate.roundtrip(call({"text": "hi"}), "q")
    assert isinstance(asked, types.InputRequiredResult)
    clock.now += 0.02  # a headless client answering its own question
    itself = gate.roundtrip(call({"text": "hi"}, asked.request_state, approving()), "q")
    assert text_of(itself) == ANSWERED_ITSELF.format(tool="notes_echo", answer="accepted", ms=20)
    # The answer is spent: the same state, answered later, is a replay, not a second chance.
    clock.now += READS
    again = gate.roundtrip(call({"text": "hi"}, asked.request_state, approving()), "q")
    assert text_of(again) == REPLAYED.format(tool="notes_echo")


def test_min_answer_zero_takes_any_answer_as_the_persons() -> None:
    gate = Gate(wait=30, min_answer=0.0, clock=Clock())
    asked = gate.roundtrip(call({"text": "hi"}), "q")
    assert isinstance(asked, types.InputRequiredResult)
    assert gate.roundtrip(call({"text": "hi"}, asked.request_state, approving()), "q") is None


def test_a_state_without_the_moment_it_was_asked_is_not_this_gates() -> None:
    state = json.dumps({"t": "notes_echo", "a": arguments_hash({"text": "hi"}), "n": "x"})
    refused = Gate(wait=30, clock=Clock()).roundtrip(call({"text": "hi"}, state, approving()), "q")
    assert text_of(refused) == MISMATCH.format(tool="notes_echo")
