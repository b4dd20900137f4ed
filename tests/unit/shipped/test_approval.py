"""The shipped server's 2026-07-28 approval round trip: the question carries a state bound to the call, and only the
retry of that very call, with an approving answer, runs it, once."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from saip.common.approval_form import APPROVAL_SCHEMA, INPUT_KEY
from saip.common.approval_sentences import MISMATCH, REPLAYED
from saip.shipped.approval import Gate


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
    gate = Gate(wait=30)
    asked = gate.roundtrip(call({"text": "hi"}), "the question")
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
    gate = Gate(wait=30)
    for answer in (approving(ticked=False), types.ElicitResult(action="decline")):
        asked = gate.roundtrip(call({"text": "hi"}), "q")
        assert isinstance(asked, types.InputRequiredResult)
        declined = gate.roundtrip(call({"text": "hi"}, asked.request_state, answer), "q")
        # The seed's sentence, as the gateway says it: one module writes every outcome (issue 30, defect 6).
        assert (
            text_of(declined) == "Tool 'notes_echo' was not run: the user declined. Do not retry it for this request."
        )
