"""The agent loop's own rules over a scripted model and a toolbox of fakes: repeated calls, arguments that are not
an object, long results, a deadline already past or reached while a tool call is out, and a turn stopped at a
question that carries on from its state (as JSON, as the conversation keeps it) with the answer for that one question
only, or, past its deadline, runs nothing."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio

from saip.gateway.areas.chat.model import Reply, ToolRequest
from saip.gateway.areas.chat.turn import (
    REPEATS,
    RESULT_CHARS,
    Ran,
    Status,
    Turn,
    TurnInteraction,
    TurnState,
)
from saip.gateway.surface.approval import Answer, Asked, Interaction
from saip.gateway.surface.management import Deadline


def asks(*calls: tuple[str, dict[str, Any] | str]) -> Reply:
    requests = tuple(
        ToolRequest(f"call-{n}", name, arguments if isinstance(arguments, str) else json.dumps(arguments))
        for n, (name, arguments) in enumerate(calls)
    )
    message = {"role": "assistant", "content": "", "tool_calls": [{"id": r.id} for r in requests]}
    return Reply(message, "", requests, 10)


def says(text: str) -> Reply:
    return Reply({"role": "assistant", "content": text}, text, (), 5)


class Model:
    name = "fake"

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], within: float) -> Reply:
        self.seen.append([dict(message) for message in messages])
        return self.replies.pop(0)


class Toolbox:
    """Answers every call with its arguments; `gated` names a tool that asks (2026-07-28) until answered."""

    def __init__(self, gated: str = "", text: str = "", hangs: str = "") -> None:
        self.gated = gated
        self.text = text
        self.hangs = hangs  # a tool that never returns
        self.calls: list[tuple[str, dict[str, Any], str | None]] = []

    def definitions(self) -> list[dict[str, Any]]:
        return []

    async def call(self, name: str, arguments: dict[str, Any], interaction: Interaction, deadline: Deadline) -> Ran:
        self.calls.append((name, arguments, interaction.state))
        if name == self.hangs:
            await anyio.sleep_forever()
        if name == self.gated and interaction.state is None:
            return Ran(question=Asked("May I?", {}, "inner-state"))
        return Ran(self.text or json.dumps(arguments))


async def quiet(message: str) -> None:
    return None


def state(timeout: float = 60.0) -> TurnState:
    return TurnState(messages=[{"role": "user", "content": "go"}], deadline=time.time() + timeout, timeout=timeout)


def turn(model: Model, toolbox: Toolbox, *allowed: str) -> Turn:
    return Turn(model=model, toolbox=toolbox, allowed=frozenset(allowed), progress=quiet)


def tool_messages(current: TurnState) -> list[str]:
    return [message["content"] for message in current.messages if message["role"] == "tool"]


async def test_the_same_call_runs_at_most_repeats_times_and_arguments_must_be_an_object() -> None:
    same = [("echo", {"text": "a"})] * (REPEATS + 1)
    model = Model(asks(*same, ("echo", "[1, 2]"), ("echo", "not json")), says("done"))
    toolbox = Toolbox()
    current = state()
    end = await turn(model, toolbox, "echo").run(current, TurnInteraction(None))

    assert (end.status, end.answer) == (Status.OK, "done")
    assert len(toolbox.calls) == REPEATS
    told = tool_messages(current)
    assert told[REPEATS] == (
        f"Tool 'echo' was not run: it already ran {REPEATS} times with these arguments in this turn. Use what it "
        "returned."
    )
    assert (
        told[REPEATS + 1]
        == told[REPEATS + 2]
        == (
            "Tool 'echo' was not run: its arguments were not a JSON object. Call it again with arguments that match "
            "its schema."
        )
    )
    assert [outcome for _, outcome in current.calls] == ["ran"] * REPEATS + ["refused"] * 3
    assert current.tokens == 15


async def test_a_long_result_reaches_the_model_cut() -> None:
    model = Model(asks(("echo", {})), says("ok"))
    current = state()
    await turn(model, Toolbox(text="x" * (RESULT_CHARS + 50)), "echo").run(current, TurnInteraction(None))
    [told] = tool_messages(current)
    assert told == "x" * RESULT_CHARS + " [cut]"


async def test_a_turn_past_its_deadline_ends_with_what_it_had_without_asking_the_model() -> None:
    model = Model()
    current = state(timeout=5)
    current.deadline = time.time() - 1
    current.messages.append({"role": "assistant", "content": "half an answer"})
    end = await turn(model, Toolbox()).run(current, TurnInteraction(None))
    assert (end.status, end.answer) == (Status.TIMEOUT, "half an answer")
    assert end.problem == "The turn reached its timeout (5 s) and ended with what it had"
    assert model.seen == []


async def test_a_turn_stopped_at_a_question_carries_on_from_its_state_with_the_answer_for_that_question_only() -> None:
    model = Model(asks(("outline", {"text": "a"}), ("outline", {"text": "b"})), says("both outlined"))
    toolbox = Toolbox(gated="outline")
    current = state()
    stopped = await turn(model, toolbox, "outline").run(current, TurnInteraction(None))
    assert stopped.question is not None and stopped.question.state == "inner-state"

    # The conversation keeps the state as JSON; the retry brings the answer with the question's state.
    resumed = TurnState.loads(current.dumps())
    answered = TurnInteraction(None, "inner-state", Answer("accept", {"approve": ["run"]}))
    second = await turn(model, toolbox, "outline").run(resumed, answered)
    assert second.question is not None  # the second call is a question of its own

    again = TurnState.loads(resumed.dumps())
    end = await turn(model, toolbox, "outline").run(again, TurnInteraction(None, "inner-state", None))
    assert (end.status, end.answer) == (Status.OK, "both outlined")
    assert toolbox.calls == [
        ("outline", {"text": "a"}, None),
        ("outline", {"text": "a"}, "inner-state"),
        ("outline", {"text": "b"}, None),
        ("outline", {"text": "b"}, "inner-state"),
    ]
    assert len(model.seen) == 2  # the model was never asked again for the calls it had asked for
    assert again.calls == [("outline", "ran"), ("outline", "ran")]


async def test_a_tool_call_out_when_the_deadline_comes_counts_as_failed() -> None:
    model = Model(asks(("echo", {"text": "a"}), ("slow", {})))
    current = state(timeout=0.2)
    end = await turn(model, Toolbox(hangs="slow"), "echo", "slow").run(current, TurnInteraction(None))
    assert (end.status, end.problem) == (
        Status.TIMEOUT,
        "The turn reached its timeout (0.2 s) and ended with what it had",
    )
    assert current.calls == [("echo", "ran"), ("slow", "failed")]


async def test_a_turn_resumed_past_its_deadline_runs_nothing_and_its_call_at_the_question_failed() -> None:
    model = Model(asks(("outline", {"text": "a"})))
    toolbox = Toolbox(gated="outline")
    current = state()
    stopped = await turn(model, toolbox, "outline").run(current, TurnInteraction(None))
    assert stopped.question is not None

    late = TurnState.loads(current.dumps())
    late.deadline = time.time() - 1
    answered = TurnInteraction(None, "inner-state", Answer("accept", {"approve": ["run"]}))
    end = await turn(model, toolbox, "outline").run(late, answered)
    assert end.status is Status.TIMEOUT
    assert toolbox.calls == [("outline", {"text": "a"}, None)]  # the question's record is the sweeper's
    assert late.calls == [("outline", "failed")] == current.unanswered().calls
