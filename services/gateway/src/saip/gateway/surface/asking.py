"""Asking the person at the AI's own client, in both protocol eras; shared by every gate that asks.

2025-11-25 clients have a back channel: the question is pushed as `elicitation/create` and the call waits, reporting
`Waiting for approval: N s left` as progress every interval. 2026-07-28 clients have none: the call returns the
question (`InputRequiredResult`) with a state that binds the tool, the canonical arguments' hash, the revisions its plan
read (`surface.expected`), a one-shot nonce and an expiry; the client calls again with the answer, and the retry's
fresh plan must read the same revisions. The MCP SDK seals that state (every replica shares the key), and
the nonce is spent in a store every replica shares, so an answer cannot be replayed, moved or given late.

A client that cannot ask (no elicitation) has its questions parked for the person out of band when
management.out-of-band-approvals is on (`surface.pending`): a 2025-11-25 call is held, with its progress, until the
person answers or the wait ends; a 2026-07-28 client gets the question back on each retry until then.

An answer at the client counts as the person's only when a person could have given it: a dismissal (`cancel`) is no
decision, and an answer sooner than `min_answer` after the question (management.min-answer-ms) is the client's own.
With out-of-band approvals on, either hands the question to the person, in both eras; off, a dismissal is a decline
and an answer of the client's own is DENIED, its record saying the client answered (`CLIENT_ITSELF`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio

from saip.common.approval_form import APPROVAL_SCHEMA, APPROVE_FIELD, RUN
from saip.common.approval_sentences import countdown, within
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import (
    BY_CLIENT,
    CLIENT_ITSELF,
    OUT_OF_BAND,
    Answer,
    Asked,
    Binding,
    Decided,
    Decision,
    ElicitationFailed,
    Interaction,
    NonceStore,
    Rejected,
    StateProblem,
    new_nonce,
)
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import Caller
from saip.gateway.surface.pending import EXPIRED, WITHDRAWN, NoQuestions, QuestionStore
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

ANSWER_POLL = 0.25  # seconds between two looks at a held question's answer


@dataclass(frozen=True)
class Question:
    """One question as it is put: its text, its level, what it binds, and the client it is put to."""

    text: str
    binding: Binding
    caller: Caller
    level: str = ""

    def parked(self, now: float, wait: float, *, held: bool) -> gateway_pb2.PendingQuestion:
        """The question as the store keeps it, waiting for the person out of band (`held`: its call waits too)."""
        return gateway_pb2.PendingQuestion(
            tool=self.binding.tool,
            deadline=now + wait,
            asked_at=now,
            out_of_band=True,
            held=held,
            message=self.text,
            client=self.caller.label,
            level=self.level,
            arguments_hash=self.binding.arguments_hash,
            revisions=self.binding.revisions(),
        )


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
        min_answer: float = 0.0,
    ) -> None:
        self.wait_seconds = wait_seconds
        # management.out-of-band-approvals: a question no person at the client decides is parked for the person.
        self.out_of_band = out_of_band
        # management.min-answer-ms, in seconds: an answer sooner than this is the client's own (0: the rule is off).
        self.min_answer = min_answer
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

    async def ask(self, interaction: Interaction, question: Question, wait: float) -> Asked | Decided | Rejected:
        """Put the question to the person for at most `wait` seconds (`wait_for`): at their client when it can ask
        (elicitation), else out of band (when that is on), and return what came of it."""
        if interaction.roundtrip:
            asked = await self._roundtrip(interaction, question, wait)
        elif not question.caller.elicitation:
            asked = await self._hold(interaction, question, wait)
        else:
            asked = await self._push(interaction, question, wait)
        if isinstance(asked, Decided) and not asked.recorded:
            self._metrics.approval_wait.labels(asked.decision.value).observe(asked.waited)
        return asked

    def _nobody_decided(self, answer: Answer | None, waited: float) -> tuple[bool, bool]:
        """Whether no person decided at the client (a dismissal, or the client's own answer), and whether the answer
        was the client's own: sooner than a person can read the question."""
        itself = waited < self.min_answer
        return itself or answer is None or answer.dismissed, itself

    async def _push(self, interaction: Interaction, question: Question, wait: float) -> Decided:
        started = anyio.current_time()
        answer: Answer | None = None
        self._metrics.approvals_pending.inc()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._report_progress, interaction, started, wait)
                try:
                    with anyio.move_on_after(wait):
                        answer = await interaction.elicit(question.text, APPROVAL_SCHEMA)
                except ElicitationFailed as exc:
                    group.cancel_scope.cancel()
                    return Decided(Decision.ELICIT_FAILED, anyio.current_time() - started, str(exc))
                group.cancel_scope.cancel()
        finally:
            self._metrics.approvals_pending.dec()
        waited = anyio.current_time() - started
        if answer is None:
            return Decided(Decision.TIMEOUT, waited)
        nobody, itself = self._nobody_decided(answer, waited)
        if nobody and self.out_of_band:  # the person decides out of band, for what is left of the wait
            held = await self._hold(interaction, question, wait - waited)
            return replace(held, waited=waited + held.waited)
        if itself:
            return Decided(Decision.DENIED, waited, answer.said, via=CLIENT_ITSELF)
        return Decided(Decision.APPROVED if answer.approves else Decision.DECLINED, waited, via=BY_CLIENT)

    async def _hold(self, interaction: Interaction, question: Question, wait: float) -> Decided:
        """2025-11-25, out of band: park the question for the person and hold the call (with progress) until they
        answer or the wait ends; this call records its own end, so no sweeper does."""
        nonce = new_nonce()
        tool = question.binding.tool
        try:
            await self.pending.park(nonce, question.parked(self._clock(), wait, held=True))
        except Exception as exc:  # the person cannot see the question: nobody can answer it
            logger.warning("an out-of-band question could not be parked", extra={"tool": tool, "error": repr(exc)})
            return Decided(Decision.ELICIT_FAILED, 0.0, "the question could not be parked for the person")
        started = anyio.current_time()
        ended = WITHDRAWN  # unless it is answered or its wait ends: its call went away
        self._metrics.approvals_pending.inc()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._report_progress, interaction, started, wait)
                with anyio.move_on_after(wait) as waiting:
                    await self._answered(nonce)
                ended = EXPIRED if waiting.cancelled_caught else ended
                group.cancel_scope.cancel()
        finally:
            self._metrics.approvals_pending.dec()
            with anyio.CancelScope(shield=True):
                final = await self._closed(nonce, ended)
        waited = anyio.current_time() - started
        if final is None or not final.answer:
            return Decided(Decision.TIMEOUT, waited)
        return Decided(Decision(final.answer), waited, via=final.answered_via or OUT_OF_BAND)

    async def _closed(self, nonce: str, ended: str) -> gateway_pb2.PendingQuestion | None:
        """Settle a held question, so it takes no answer any more, and read it: an answer given before that still
        counts (and is what ended it). A store that is away reads as no answer."""
        try:
            await self.pending.settle(nonce, ended)
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

    async def _roundtrip(self, interaction: Interaction, question: Question, wait: float) -> Asked | Decided | Rejected:
        """2026-07-28: the question goes back with the sealed state, and the retry brings the answer: the client's,
        or the person's out of band (a client that cannot ask, or whose answer no person gave), until which the retry
        gets the question back."""
        state, binding, client = interaction.state, question.binding, question.caller.label
        if state is None:
            issued = self._issue(binding, wait)
            claims = json.loads(issued)
            return self._asked(question, issued, claims, out_of_band=not question.caller.elicitation)
        claims = _parse(state)
        if claims is None or claims.get("t") != binding.tool or claims.get("a") != binding.arguments_hash:
            return Rejected(StateProblem.MISMATCH)
        now = self._clock()
        waited = max(0.0, now - float(claims["iat"]))
        nonce = str(claims["n"])
        if now > float(claims["exp"]):
            await self._nonces.spend(nonce, binding.tool)
            had = round(float(claims["exp"]) - float(claims["iat"]), 3)
            return Decided(Decision.TIMEOUT, waited, recorded=not await self.pending.settle(nonce, EXPIRED), wait=had)
        answer, via, itself = interaction.answer, BY_CLIENT, False
        held = not question.caller.elicitation
        stored = await self.pending.stored(nonce) if held or self.out_of_band else None
        if stored is None or not stored.out_of_band:
            nobody, itself = self._nobody_decided(answer, waited)
            if nobody and self.out_of_band and await self.pending.hand_over(nonce, client):
                return self._asked(question, state, claims, out_of_band=True, again=True)
        if held or (stored is not None and stored.out_of_band):
            if stored is None or not stored.answer:
                return self._asked(question, state, claims, out_of_band=True, again=True)
            approved = stored.answer == Decision.APPROVED
            answer = Answer("accept" if approved else "decline", {APPROVE_FIELD: [RUN]})
            via, itself = stored.answered_via or OUT_OF_BAND, False
        if not await self._nonces.spend(nonce, binding.tool):
            return Rejected(StateProblem.REPLAYED)
        if not await self.pending.settle(nonce):
            # A sweeper (its clock a little ahead) recorded the question as TIMEOUT first: so it ended.
            return Decided(Decision.TIMEOUT, waited, recorded=True)
        if itself:
            return Decided(Decision.DENIED, waited, answer.said if answer else "dismissed", via=CLIENT_ITSELF)
        change = binding.expected.change_since(claims.get("r", []))
        if change is not None:
            return Rejected(StateProblem.CHANGED, change)
        approved = answer is not None and answer.approves
        return Decided(Decision.APPROVED if approved else Decision.DECLINED, waited, via=via)

    def _asked(
        self, question: Question, state: str, claims: dict[str, Any], *, out_of_band: bool, again: bool = False
    ) -> Asked:
        return Asked(
            question.text,
            APPROVAL_SCHEMA,
            state,
            nonce=str(claims["n"]),
            asked_at=float(claims["iat"]),
            deadline=float(claims["exp"]),
            out_of_band=out_of_band,
            client=question.caller.label,
            again=again,
            level=question.level,
            binding=question.binding,
        )

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
