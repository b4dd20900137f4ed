"""One turn of the agent loop, without a screen: ask the model, run the tools it asks for, until it answers.

The rules a turn keeps, whatever the model says:
- only the tools named for the turn run; a `saip_` tool (a prompt injected through a tool result, say) or any other
  name is answered with a refusal inside the turn and never runs;
- the same call with the same arguments runs at most `REPEATS` times; a tool's text reaches the model cut at
  `RESULT_CHARS`;
- `MAX_ROUNDS` model rounds at most (an endless reply ends the turn with an error), all within the turn's deadline
  (a turn past it ends with what it has, and says so); every wait of its tool calls ends by that deadline too (their
  caller carries it, `Deadline`), and a tool call the deadline cuts counts as failed;
- a gated tool, and an exposed upstream tool's own question, ask the person at the client that started the turn (the
  published tools' own gate and relay do it): a 2025-11-25 client is asked while the turn waits; in the 2026-07-28
  era the turn stops at the question with its working state (`TurnState`), and `Turn.run` carries on from it when
  the client calls again with the answer (the gate's state, or the parked upstream call's, goes back with it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio

from saip.common.words import is_reserved
from saip.gateway.areas.chat.model import Model, ModelFailed, ModelTimedOut, ToolRequest
from saip.gateway.surface.approval import Answer, Asked, ElicitationFailed, Interaction
from saip.gateway.surface.management import Deadline

logger = logging.getLogger(__name__)

MAX_ROUNDS = 16
REPEATS = 3
RESULT_CHARS = 12_000

RESERVED = (
    "Tool '{tool}' was not run: saip_ management tools are never callable from a chat turn. Answer with the tools "
    "this turn has."
)
NOT_NAMED = "Tool '{tool}' was not run: it is not among the tools of this turn ({tools}). Answer with those."
NOT_AN_OBJECT = (
    "Tool '{tool}' was not run: its arguments were not a JSON object. Call it again with arguments that match its "
    "schema."
)
REPEATED = (
    "Tool '{tool}' was not run: it already ran {times} times with these arguments in this turn. Use what it returned."
)
ENDLESS = (
    "The model asked for tools {rounds} rounds in a row without answering; the turn was ended. Ask for a smaller "
    "step, or name fewer tools."
)
TIMED_OUT = "The turn reached its timeout ({seconds} s) and ended with what it had"


class Status(StrEnum):
    OK = "ok"
    TIMEOUT = "timeout"
    ERROR = "error"


class ToolOutcome(StrEnum):
    """How one tool call of a turn ended, as the conversation keeps it (the audit trail has the gate's outcome)."""

    RAN = "ran"
    FAILED = "failed"  # the tool, its gate or the person said no or failed; the text says which
    REFUSED = "refused"  # refused inside the turn: never reached the tool


@dataclass(frozen=True)
class Ran:
    """What a tool call gave the turn: its text, whether it failed, or (2026-07-28) the question to put first."""

    text: str = ""
    failed: bool = False
    question: Asked | None = None


class Toolbox(Protocol):
    """The tools of one turn, called through the published tools' gate; each call's waits end by `deadline`."""

    def definitions(self) -> list[dict[str, Any]]: ...

    async def call(self, name: str, arguments: dict[str, Any], interaction: Interaction, deadline: Deadline) -> Ran: ...


Progress = Callable[[str], Awaitable[None]]


@dataclass
class TurnState:
    """A turn's working state; JSON, so a turn stopped at a question resumes on any replica."""

    messages: list[dict[str, Any]]
    deadline: float  # wall clock: the person's wait on a question counts too
    timeout: float
    queue: list[dict[str, str]] = field(default_factory=list)  # tool calls of the last reply still to run
    tokens: int = 0
    rounds: int = 0
    calls: list[tuple[str, str]] = field(default_factory=list)  # (tool, ToolOutcome)
    repeats: dict[str, int] = field(default_factory=dict)

    def dumps(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    def unanswered(self) -> TurnState:
        """The turn as it ends when nobody answers the question it stopped at: the call at the question failed."""
        ended = TurnState.loads(self.dumps())
        ended.calls.append((ended.queue.pop(0)["name"], ToolOutcome.FAILED))
        return ended

    @classmethod
    def loads(cls, text: str) -> TurnState:
        data = json.loads(text)
        data["calls"] = [tuple(call) for call in data.get("calls", [])]
        return cls(**data)

    @property
    def answer(self) -> str:
        """The model's last words so far."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant" and message.get("content"):
                return str(message["content"])
        return ""


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended: an answer, a timeout or an error (`problem` says which), or a question to put first."""

    status: Status
    answer: str = ""
    problem: str = ""
    question: Asked | None = None


class TurnInteraction:
    """The channel the turn's tool calls ask through: the caller's own (its elicitation, its progress), and on a
    2026-07-28 retry the answer and state of the one question the turn stopped at."""

    def __init__(self, outer: Interaction | None, state: str | None = None, answer: Answer | None = None) -> None:
        self._outer = outer
        self._state = state
        self._answer = answer

    def fresh(self) -> TurnInteraction:
        """The same channel for the next question: the answer it carried belongs to one question only."""
        return TurnInteraction(self._outer)

    @property
    def roundtrip(self) -> bool:
        return self._outer is not None and self._outer.roundtrip

    @property
    def answer(self) -> Answer | None:
        return self._answer

    @property
    def state(self) -> str | None:
        return self._state

    @property
    def reports_progress(self) -> bool:
        return self._outer is not None and self._outer.reports_progress

    async def elicit(self, message: str, schema: dict[str, Any]) -> Answer:
        if self._outer is None:
            raise ElicitationFailed("this caller has no channel for questions")
        return await self._outer.elicit(message, schema)

    async def progress(self, done: float, total: float, message: str) -> None:
        if self._outer is not None:
            await self._outer.progress(done, total, message)


class Turn:
    def __init__(self, *, model: Model, toolbox: Toolbox, allowed: frozenset[str], progress: Progress) -> None:
        self._model = model
        self._toolbox = toolbox
        self._allowed = allowed
        self._progress = progress
        self._running: str | None = None  # the tool whose call (or its question) is out

    async def run(self, state: TurnState, interaction: TurnInteraction) -> TurnEnd:
        """Carry the turn on from `state` until the model answers, the turn fails, or a question must go first."""
        deadline = Deadline.of(state.deadline)
        # A turn resumed at its question has that call out already: its answer came, or the turn's time ran out.
        self._running = state.queue[0]["name"] if interaction.state is not None and state.queue else None
        end: TurnEnd | None = None
        if not deadline.reached:  # a late retry runs nothing: the question's own record is the sweeper's
            with anyio.CancelScope(deadline=deadline.loop):
                end = await self._loop(state, interaction, deadline)
        if end is not None:
            return end
        if self._running is not None:  # the deadline cut it: its record says TIMEOUT, the turn counts it failed
            state.calls.append((self._running, ToolOutcome.FAILED))
        return timed_out(state)

    async def _loop(self, state: TurnState, interaction: TurnInteraction, deadline: Deadline) -> TurnEnd:
        while True:
            while state.queue:
                request = ToolRequest(**state.queue[0])
                ran, outcome = await self._call(state, request, interaction, deadline)
                self._running = None
                if ran.question is not None:
                    return TurnEnd(Status.OK, question=ran.question)
                interaction = interaction.fresh()
                state.queue.pop(0)
                state.calls.append((request.name, outcome))
                text = ran.text if len(ran.text) <= RESULT_CHARS else ran.text[:RESULT_CHARS] + " [cut]"
                state.messages.append({"role": "tool", "tool_call_id": request.id, "content": text})
            if state.rounds >= MAX_ROUNDS:
                return TurnEnd(Status.ERROR, state.answer, ENDLESS.format(rounds=MAX_ROUNDS))
            if deadline.reached:  # a tool that took the rest of the time
                return timed_out(state)
            state.rounds += 1
            await self._progress(f"Asking the model (round {state.rounds})")
            try:
                reply = await self._model.complete(
                    state.messages, self._toolbox.definitions(), max(0.001, deadline.left())
                )
            except ModelTimedOut:
                return timed_out(state)
            except ModelFailed as exc:
                return TurnEnd(Status.ERROR, state.answer, f"The turn ended: {exc}.")
            state.tokens += reply.tokens
            state.messages.append(reply.message)
            if not reply.tool_calls:
                return TurnEnd(Status.OK, reply.text)
            state.queue = [asdict(request) for request in reply.tool_calls]

    async def _call(
        self, state: TurnState, request: ToolRequest, interaction: TurnInteraction, deadline: Deadline
    ) -> tuple[Ran, str]:
        name = request.name
        if is_reserved(name):
            return Ran(RESERVED.format(tool=name), failed=True), ToolOutcome.REFUSED
        if name not in self._allowed:
            named = ", ".join(sorted(self._allowed)) or "none"
            return Ran(NOT_NAMED.format(tool=name, tools=named), failed=True), ToolOutcome.REFUSED
        try:
            arguments = json.loads(request.arguments or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return Ran(NOT_AN_OBJECT.format(tool=name), failed=True), ToolOutcome.REFUSED
        key = name + "\0" + json.dumps(arguments, sort_keys=True)
        if state.repeats.get(key, 0) >= REPEATS:
            return Ran(REPEATED.format(tool=name, times=REPEATS), failed=True), ToolOutcome.REFUSED
        await self._progress(f"Running tool '{name}'")
        self._running = name
        ran = await self._toolbox.call(name, arguments, interaction, deadline)
        if ran.question is None:
            state.repeats[key] = state.repeats.get(key, 0) + 1
        return ran, ToolOutcome.FAILED if ran.failed else ToolOutcome.RAN


def timed_out(state: TurnState) -> TurnEnd:
    return TurnEnd(Status.TIMEOUT, state.answer, TIMED_OUT.format(seconds=f"{state.timeout:g}"))
