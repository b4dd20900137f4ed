"""2026-07-28 questions nobody answers are recorded as TIMEOUT once, on exactly one replica.

A 2026-07-28 question goes back to the client and the call ends there; its record is written when the client calls
again with the answer. When no answer comes, nobody would write it. So the gate parks each question it returns, with
its TIMEOUT record made ready, in a store every replica shares (`saip-questions`, key = the question's nonce):

- the retry that carries the answer settles it first (`settle`): taken back, that call records what came of it;
  already claimed by a sweeper, the TIMEOUT is on the trail, and the retry is answered as expired and recorded
  nowhere else;
- every replica runs a `Sweeper`, which follows the store and, shortly after a deadline passed, claims the question
  with a compare-and-set (`expire`): one replica wins, spends the nonce (a late retry is refused as expired) and
  publishes the TIMEOUT record, which the audit service counts on the HITL meter.

The same store holds the out-of-band questions (management.out-of-band-approvals), the person's inbox: a question to
a client that cannot ask, or that no person at the client decided (`surface.asking`), parked with its text, what it
binds and its level, which the person answers through `OutOfBand` (the REST API, the command line, the console) on
any replica; the call (held, or retried) reads the answer from the store. Each change of a question is a put to the
bucket (`surface.pending`), so watching it follows the inbox as it changes.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import anyio

from saip.common.words import plural
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface import pending
from saip.gateway.surface.approval import Decision, NonceStore
from saip.gateway.surface.audited import AuditSink
from saip.gateway.surface.management import ManagementResult
from saip.gateway.surface.pending import Parked, QuestionStore
from saip.v1 import common_pb2, events_pb2, gateway_pb2

logger = logging.getLogger(__name__)

SWEEP_INTERVAL = 0.5  # seconds between two looks at the deadlines: a TIMEOUT is recorded this soon after the wait


class Sweeper:
    """One replica's share of recording the questions nobody answered."""

    def __init__(
        self,
        *,
        store: QuestionStore,
        nonces: NonceStore,
        sink: AuditSink,
        metrics: GatewayMetrics,
        replica: str,
        clock: Callable[[], float] = time.time,
        interval: float = SWEEP_INTERVAL,
    ) -> None:
        self._store = store
        self._nonces = nonces
        self._sink = sink
        self._metrics = metrics
        self._replica = replica
        self._clock = clock
        self._interval = interval
        self.pending: dict[str, Parked] = {}
        self.rounds = 0  # sweeps done, for a test to wait on
        self.recorded = 0  # TIMEOUT records this replica published

    async def follow(self) -> None:
        """One run of the store's watch (kept alive by `keep_alive`): what is parked, then every change."""
        fresh: dict[str, Parked] = {}
        initial = True
        async for update in self._store.watch():
            if update is None:
                if initial:
                    self.pending, initial = fresh, False
                continue
            target = fresh if initial else self.pending
            if isinstance(update, str):
                target.pop(update, None)
            elif update.question.timed_out or update.question.settled:
                target.pop(update.nonce, None)
            else:
                target[update.nonce] = update

    def settled(self, nonce: str) -> None:
        """A question this replica just answered leaves its view at once: a listing right after the answer (the
        console's, the command line's) must not show it waiting until the watch brings the same change."""
        self.pending.pop(nonce, None)

    def waiting(self) -> list[Parked]:
        """The out-of-band questions still waiting for the person, oldest first (this replica's view of every
        replica's, kept by the watch)."""
        now = self._clock()
        found = [parked for parked in self.pending.values() if pending.waiting(parked.question, now)]
        return sorted(found, key=lambda parked: parked.question.asked_at)

    async def sweep_forever(self) -> None:
        while True:
            await self.sweep()
            await anyio.sleep(self._interval)

    async def sweep(self) -> None:
        """Claim every question past its deadline; a store or audit that is away is tried again next round."""
        now = self._clock()
        # A held question's call records its own end (it waits in its process); the others are this sweep's.
        for parked in [p for p in self.pending.values() if p.question.deadline <= now and not p.question.held]:
            try:
                await self._expired(parked)
            except Exception as exc:  # the next round tries again; the watch corrects what was read
                said = {"tool": parked.question.tool, "error": repr(exc)}
                logger.warning("an unanswered question could not be recorded yet", extra=said)
        self.rounds += 1

    async def _expired(self, parked: Parked) -> None:
        question = parked.question
        if not await self._store.expire(parked, self._replica):
            self.pending.pop(parked.nonce, None)
            return  # answered meanwhile, or another replica claimed it
        self.pending.pop(parked.nonce, None)
        await self._nonces.spend(parked.nonce, question.tool)
        record = events_pb2.AuditRecord.FromString(question.record)
        await self._sink.publish(question.subject, record, question.record_id)
        kind = record.WhichOneof("record")
        if kind and getattr(record, kind).hitl == common_pb2.HITL_DECISION_TIMEOUT:
            # saip's own question went unanswered; an upstream's or a chat turn's is not an approval's wait
            self._metrics.approval_wait.labels(Decision.TIMEOUT.value).observe(question.deadline - question.asked_at)
        self.recorded += 1
        logger.info("unanswered question recorded as TIMEOUT", extra={"tool": question.tool})


# The recent answers to questions, newest first, as the audit trail keeps them (at most the count asked for).
Answers = Callable[[int], Awaitable[list[dict[str, Any]]]]
RECENT_ANSWERS = 20


class OutOfBand:
    """The person's side of out-of-band approvals (management.out-of-band-approvals), their inbox: the questions
    waiting for them, the recent answers to every question (theirs, and the clients'), and their answer to one; what
    `/api/v1/approvals` and `saip approvals` show and do (admin token)."""

    def __init__(
        self,
        *,
        store: QuestionStore,
        sweeper: Sweeper,
        enabled: bool,
        answers: Answers | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._sweeper = sweeper
        self._enabled = enabled
        self._answers = answers
        self._clock = clock

    async def waiting(self, recent: int = RECENT_ANSWERS) -> ManagementResult:
        found = [self._view(parked.nonce, parked.question) for parked in self._sweeper.waiting()]
        message = f"{plural(len(found), 'question')} waiting for an answer."
        if not self._enabled:
            message += " Out-of-band approvals are off (management.out-of-band-approvals): such questions are denied."
        result = ManagementResult(True, message, data={"approvals": found, "answered": None})
        if self._answers is not None:
            try:
                result.data["answered"] = await self._answers(recent)
            except ServiceUnavailable as exc:  # the waiting questions are the gateway's: they list all the same
                result.warnings.append(f"The recent answers could not be read: {exc}")
        return result

    async def answer(self, question_id: str, approve: bool, via: str) -> ManagementResult:
        """The person's answer, through `via` (their interface: rest, cli, console), which the record keeps."""
        decision = Decision.APPROVED if approve else Decision.DECLINED
        question = await self._store.answer(question_id, decision.value, self._clock(), via)
        self._sweeper.settled(question_id)
        verb = "Approved" if approve else "Declined"
        runs = "it runs now" if approve else "it will not run"
        message = f"{verb} {question.tool} for {question.client}: {runs}."
        return ManagementResult(True, message, persisted=True, data=self._view(question_id, question))

    def _view(self, question_id: str, question: gateway_pb2.PendingQuestion) -> dict[str, Any]:
        return {
            "id": question_id,
            "tool": question.tool,
            "client": question.client,
            "level": question.level or None,
            "question": question.message,
            # What an answer approves: this tool with exactly these arguments, over these revisions of what it reads.
            "binds": {
                "tool": question.tool,
                "argumentsHash": question.arguments_hash or None,
                "revisions": dict(sorted(question.revisions.items())),
            },
            "askedAt": _when(question.asked_at),
            "deadline": _when(question.deadline),
            "secondsLeft": max(0, math.ceil(question.deadline - self._clock())),
            "held": question.held,  # 2025-11-25: the call waits; else the client retries until it is answered
            "answer": question.answer or None,
            "answeredVia": question.answered_via or None,
        }


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
