"""Asking the person at the AI's own client, in both protocol eras; shared by every gate that asks.

2025-11-25 clients have a back channel: the question is pushed as `elicitation/create` and the call waits, reporting
`Waiting for approval: N s left` as progress every interval. 2026-07-28 clients have none: the call returns the
question (`InputRequiredResult`) with a state that binds the tool, the canonical arguments' hash, the revisions its plan
read (`surface.expected`), a one-shot nonce and an expiry; the client calls again with the answer, and the retry's
fresh plan must read the same revisions. The MCP SDK seals that state (every replica shares the key), and
the nonce is spent in a store every replica shares, so an answer cannot be replayed, moved or given late.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import anyio

from saip.common import words
from saip.common.approval_form import APPROVAL_SCHEMA, APPROVE_FIELD, RUN, approves, arguments_hash
from saip.common.approval_sentences import NOT_WAITING, countdown, within
from saip.gateway.errors import ServiceRefused
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.expected import NOTHING, Expected
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import Caller, protobuf_values
from saip.v1 import common_pb2, gateway_pb2

logger = logging.getLogger(__name__)


class Decision(StrEnum):
    """The person's decisions, in the words of saip.common.words.DECISIONS (a table parallel to Level and
    Outcome in management)."""

    APPROVED = "approved"
    DECLINED = "declined"
    TIMEOUT = "timeout"
    ELICIT_FAILED = "elicit-failed"
    DENIED = "denied"

    @property
    def proto(self) -> common_pb2.HitlDecision:
        return _DECISIONS[self]


_DECISIONS = protobuf_values(Decision, words.DECISIONS)


@dataclass(frozen=True)
class Answer:
    """The client's reply to the question: accept / decline / cancel, with the form's content."""

    action: str
    content: dict[str, Any] | None = None

    @property
    def approves(self) -> bool:
        return approves(self.action, self.content)


class ElicitationFailed(Exception):
    """The question could not be put to the person (the client errored or went away)."""


class Interaction(Protocol):
    """The era-specific channel to the person, provided by the MCP layer for one call."""

    @property
    def roundtrip(self) -> bool:
        """True on 2026-07-28: no back channel, the question goes back in the result."""
        ...

    @property
    def answer(self) -> Answer | None:
        """On a 2026-07-28 retry: the client's answer to the question."""
        ...

    @property
    def state(self) -> str | None:
        """On a 2026-07-28 retry: the state the question carried (already verified and unsealed by the SDK)."""
        ...

    @property
    def reports_progress(self) -> bool:
        """Whether the client follows this call's progress (it sent a progress token): when not, a published tool's
        call goes to its service in one unary round trip instead of a stream of progress events."""
        ...

    async def elicit(self, message: str, schema: dict[str, Any]) -> Answer: ...

    async def progress(self, done: float, total: float, message: str) -> None: ...


class NonceStore(Protocol):
    async def spend(self, nonce: str, tool: str) -> bool:
        """True the first time a nonce is spent, False ever after (on any replica)."""
        ...


@dataclass(frozen=True)
class Parked:
    """One question in the store (out with its 2026-07-28 client, or waiting out of band), at the revision read."""

    nonce: str
    question: gateway_pb2.PendingQuestion
    revision: int


class QuestionStore(Protocol):
    """The questions out with their 2026-07-28 clients and those waiting for the person out of band, shared by
    every replica (`surface.questions`)."""

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        """Keep a question that went back to its client, with its TIMEOUT record made ready."""
        ...

    async def settle(self, nonce: str) -> bool:
        """Take the question back for the call that answers it: False when a sweeper already recorded it as TIMEOUT
        (a question that was never parked, the store being away, is the caller's to record)."""
        ...

    async def expire(self, parked: Parked, replica: str) -> bool:
        """Claim an expired question at the revision read: True for exactly one caller, on any replica."""
        ...

    def watch(self) -> AsyncIterator[Parked | str | None]:
        """The questions there are, None once they are all read, then each change (a nonce alone: it is gone)."""
        ...

    async def stored(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        """The question as it is now (an out-of-band answer is in it), None when it is not parked."""
        ...

    async def answer(self, nonce: str, decision: Decision, now: float) -> gateway_pb2.PendingQuestion:
        """The person's out-of-band answer to a question still waiting; ServiceRefused says why one is not."""
        ...


class NoQuestions:
    """A store that keeps nothing (a gate without NATS, in the tests): every answer is the caller's to record, and
    an unanswered question is recorded only if its client comes back after the wait."""

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        return None

    async def settle(self, nonce: str) -> bool:
        return True

    async def expire(self, parked: Parked, replica: str) -> bool:
        return False

    async def watch(self) -> AsyncIterator[Parked | str | None]:
        yield None

    async def stored(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        return None

    async def answer(self, nonce: str, decision: Decision, now: float) -> gateway_pb2.PendingQuestion:
        raise ServiceRefused(NOT_WAITING.format(id=nonce))


# Who answered a question, as its record says.
BY_CLIENT = "client"
OUT_OF_BAND = "out-of-band"
ANSWER_POLL = 0.25  # seconds between two looks at a held question's answer


@dataclass(frozen=True)
class Binding:
    """What an approval is for: one tool with exactly these arguments, over the server state its plan read."""

    tool: str
    arguments_hash: str
    expected: Expected = NOTHING

    @classmethod
    def of(cls, tool: str, arguments: dict[str, Any] | None, expected: Expected = NOTHING) -> Binding:
        return cls(tool, arguments_hash(arguments), expected)


@dataclass(frozen=True)
class Asked:
    """2026-07-28: return this question to the client; `state` comes back with its answer. The nonce, when it was
    asked and its deadline park it (`QuestionStore`); `expired` is what its TIMEOUT record will say."""

    message: str
    schema: dict[str, Any]
    state: str
    nonce: str = ""
    asked_at: float = 0.0
    deadline: float = 0.0
    expired: str = ""
    # Out of band: parked for the person with the caller's name. `again`: parked already (a retry before the answer).
    out_of_band: bool = False
    client: str = ""
    again: bool = False
    # Not saip's approval of this call: a served tool's own question (an upstream's), or the question a chat turn
    # stopped at (its tool call's); its TIMEOUT record keeps the call's own decision.
    relayed: bool = False


@dataclass(frozen=True)
class Decided:
    """What the person decided, and how long the question waited. `recorded`: a sweeper already put this (a TIMEOUT)
    on the trail, so the call that learns it records nothing more."""

    decision: Decision
    waited: float = 0.0
    detail: str = ""
    recorded: bool = False
    via: str = ""  # who answered: BY_CLIENT or OUT_OF_BAND
    wait: float | None = None  # the wait the question had, when it is not the one asked with (a late retry's)


class StateProblem(StrEnum):
    REPLAYED = "replayed"
    MISMATCH = "mismatch"
    CHANGED = "changed"


@dataclass(frozen=True)
class Rejected:
    """A 2026-07-28 answer whose state does not belong to this call, was already used, or described server state
    that has changed since (`detail` says what)."""

    problem: StateProblem
    detail: str = ""


def new_nonce() -> str:
    """A question's one-shot nonce, which is also its id: 128 random bits in hex. The person types the id after
    `saip approvals approve`, where an id starting with a dash (as a URL-safe token can) would read as an option."""
    return secrets.token_hex(16)


class Approvals:
    """Puts one question to the person and returns what they decided."""

    def __init__(
        self,
        *,
        wait_seconds: float,
        progress_interval: float,
        nonces: NonceStore,
        metrics: GatewayMetrics,
        clock: Callable[[], float] = time.time,
        questions: WindowLimit | None = None,
        pending: QuestionStore | None = None,
        out_of_band: bool = False,
    ) -> None:
        self.wait_seconds = wait_seconds
        # management.out-of-band-approvals: a client that cannot ask has its questions parked for the person.
        self.out_of_band = out_of_band
        # Consent fatigue: how many questions one client may put to the person per window (0: no limit).
        self.questions = questions if questions is not None else WindowLimit(0, 60)
        self.progress_interval = progress_interval
        self._nonces = nonces
        # The 2026-07-28 questions out with their clients (every replica's), settled by the answers.
        self.pending: QuestionStore = pending if pending is not None else NoQuestions()
        self._metrics = metrics
        self._clock = clock

    def wait_for(self, caller: Caller) -> float:
        """How long a question of this caller may wait: the approval wait, or less when the caller's work must end
        sooner (a chat turn's calls end by the turn's deadline)."""
        if caller.deadline is None:
            return self.wait_seconds
        return min(self.wait_seconds, caller.deadline.left())

    def said(self, wait: float) -> str:
        """A wait of this caller's question as the sentences say it (`approval_sentences.within` the approval wait)."""
        return within(wait, self.wait_seconds)

    async def spend(self, nonce: str, tool: str) -> bool:
        """Spend a one-shot nonce of a question this gateway issued: True the first time, on any replica."""
        return await self._nonces.spend(nonce, tool)

    def question_allowed(self, interaction: Interaction, caller: Caller) -> float | None:
        """Count a new question of this client: None when it may be asked, else the seconds until it may. A
        2026-07-28 retry carrying the answer is the same question, not a new one."""
        if interaction.roundtrip and interaction.state is not None:
            return None
        retry = self.questions.take(caller.client)
        if retry is not None:
            self._metrics.limited.labels("questions").inc()
        return retry

    async def ask(
        self, interaction: Interaction, binding: Binding, message: str, caller: Caller, wait: float
    ) -> Asked | Decided | Rejected:
        """Put the question to the person for at most `wait` seconds (`wait_for`): at their client when it can ask
        (elicitation), else out of band (when that is on), and return what came of it."""
        held = not caller.elicitation
        if interaction.roundtrip:
            asked = await self._roundtrip(interaction, binding, message, caller if held else None, wait)
        elif held:
            asked = await self._hold(interaction, binding.tool, message, caller, wait)
        else:
            asked = await self._push(interaction, message, wait)
        if isinstance(asked, Decided) and not asked.recorded:
            self._metrics.approval_wait.labels(asked.decision.value).observe(asked.waited)
        return asked

    async def _push(self, interaction: Interaction, message: str, wait: float) -> Decided:
        started = anyio.current_time()
        answer: Answer | None = None
        self._metrics.approvals_pending.inc()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._report_progress, interaction, started, wait)
                try:
                    with anyio.move_on_after(wait):
                        answer = await interaction.elicit(message, APPROVAL_SCHEMA)
                except ElicitationFailed as exc:
                    group.cancel_scope.cancel()
                    return Decided(Decision.ELICIT_FAILED, anyio.current_time() - started, str(exc))
                group.cancel_scope.cancel()
        finally:
            self._metrics.approvals_pending.dec()
        waited = anyio.current_time() - started
        if answer is None:
            return Decided(Decision.TIMEOUT, waited)
        return Decided(Decision.APPROVED if answer.approves else Decision.DECLINED, waited, via=BY_CLIENT)

    async def _hold(self, interaction: Interaction, tool: str, message: str, caller: Caller, wait: float) -> Decided:
        """2025-11-25, out of band: park the question for the person and hold the call (with progress) until they
        answer or the wait ends; this call records its own end, so no sweeper does."""
        nonce, now = new_nonce(), self._clock()
        question = gateway_pb2.PendingQuestion(
            tool=tool,
            deadline=now + wait,
            asked_at=now,
            out_of_band=True,
            held=True,
            message=message,
            client=caller.label,
        )
        try:
            await self.pending.park(nonce, question)
        except Exception as exc:  # the person cannot see the question: nobody can answer it
            logger.warning("an out-of-band question could not be parked", extra={"tool": tool, "error": repr(exc)})
            return Decided(Decision.ELICIT_FAILED, 0.0, "the question could not be parked for the person")
        started = anyio.current_time()
        self._metrics.approvals_pending.inc()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._report_progress, interaction, started, wait)
                with anyio.move_on_after(wait):
                    await self._answered(nonce)
                group.cancel_scope.cancel()
        finally:
            self._metrics.approvals_pending.dec()
            with anyio.CancelScope(shield=True):
                final = await self._closed(nonce)
        waited = anyio.current_time() - started
        if final is None or not final.answer:
            return Decided(Decision.TIMEOUT, waited)
        return Decided(Decision(final.answer), waited, via=OUT_OF_BAND)

    async def _closed(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        """Settle a held question, so it takes no answer any more, and read it: an answer given before that still
        counts. A store that is away reads as no answer."""
        try:
            await self.pending.settle(nonce)
            return await self.pending.stored(nonce)
        except Exception as exc:
            logger.warning("a held question could not be closed", extra={"error": repr(exc)})
            return None

    async def _answered(self, nonce: str) -> None:
        """Returns once the person answered the parked question (a store away is looked at again)."""
        while True:
            try:
                stored = await self.pending.stored(nonce)
            except Exception as exc:
                logger.debug("the question store did not answer; looking again", extra={"error": repr(exc)})
                stored = None
            if stored is not None and stored.answer:
                return
            await anyio.sleep(ANSWER_POLL)

    async def _report_progress(self, interaction: Interaction, started: float, wait: float) -> None:
        while True:
            elapsed = anyio.current_time() - started
            try:
                await interaction.progress(elapsed, wait, countdown(wait - elapsed))
            except Exception as exc:  # progress is advisory; a client that cannot take it still gets the question
                logger.debug("approval progress not delivered", extra={"error": str(exc)})
            await anyio.sleep(self.progress_interval)

    async def _roundtrip(
        self, interaction: Interaction, binding: Binding, message: str, held: Caller | None, wait: float
    ) -> Asked | Decided | Rejected:
        """2026-07-28: the question goes back with the sealed state, and the retry brings the answer: the client's,
        or (`held`: a client that cannot ask) the person's out of band, until which the retry gets the question
        back."""
        state = interaction.state
        out_of_band = held is not None
        client = held.label if held is not None else ""
        if state is None:
            issued = self._issue(binding, wait)
            claims = json.loads(issued)
            return Asked(
                message, APPROVAL_SCHEMA, issued, claims["n"], claims["iat"], claims["exp"], "", out_of_band, client
            )
        claims = _parse(state)
        if claims is None or claims.get("t") != binding.tool or claims.get("a") != binding.arguments_hash:
            return Rejected(StateProblem.MISMATCH)
        now = self._clock()
        waited = max(0.0, now - float(claims["iat"]))
        nonce = str(claims["n"])
        if now > float(claims["exp"]):
            await self._nonces.spend(nonce, binding.tool)
            had = round(float(claims["exp"]) - float(claims["iat"]), 3)
            return Decided(Decision.TIMEOUT, waited, recorded=not await self.pending.settle(nonce), wait=had)
        answer, via = interaction.answer, BY_CLIENT
        if out_of_band:
            stored = await self.pending.stored(nonce)
            if stored is None or not stored.answer:
                iat, exp = float(claims["iat"]), float(claims["exp"])
                return Asked(message, APPROVAL_SCHEMA, state, nonce, iat, exp, "", True, client, again=True)
            approved = stored.answer == Decision.APPROVED
            answer, via = Answer("accept" if approved else "decline", {APPROVE_FIELD: [RUN]}), OUT_OF_BAND
        if not await self._nonces.spend(nonce, binding.tool):
            return Rejected(StateProblem.REPLAYED)
        if not await self.pending.settle(nonce):
            # A sweeper (its clock a little ahead) recorded the question as TIMEOUT first: so it ended.
            return Decided(Decision.TIMEOUT, waited, recorded=True)
        change = binding.expected.change_since(claims.get("r", []))
        if change is not None:
            return Rejected(StateProblem.CHANGED, change)
        approved = answer is not None and answer.approves
        return Decided(Decision.APPROVED if approved else Decision.DECLINED, waited, via=via)

    def _issue(self, binding: Binding, wait: float) -> str:
        now = self._clock()
        claims = {
            "v": 1,
            "t": binding.tool,
            "a": binding.arguments_hash,
            "r": binding.expected.claims(),
            "n": new_nonce(),
            "iat": now,
            "exp": now + wait,
        }
        return json.dumps(claims, separators=(",", ":"))


def _parse(state: str) -> dict[str, Any] | None:
    try:
        claims = json.loads(state)
    except ValueError:
        return None
    required = {"v", "t", "a", "n", "iat", "exp"}
    if not isinstance(claims, dict) or claims.get("v") != 1 or not required <= claims.keys():
        return None
    return claims
