"""The approval questions every replica shares (bucket `saip-questions`, one `PendingQuestion` per nonce): the store's
contract, and each change a question may go through, as pure functions both the NATS store (`clients.KvQuestions`)
and a test's store apply.

A question is in the store while it is out with its 2026-07-28 client, or waits for the person out of band (the
inbox). Each change is a put of the whole record, made at the revision read, so two changes never both land:

| change | by | what the record says |
|---|---|---|
| asked | the gate that asked | a new key; `out_of_band` when it waits for the person |
| handed over | a 2026-07-28 retry whose client dismissed it, or answered sooner than a person can | `out_of_band` |
| answered | the person, out of band, on any replica | `answer`, `answered_at`, `answered_via` (their interface) |
| settled | the call the answer (or the wait's end, or its client's leaving) ended | `settled`, `ended`, `ended_at` |
| expired | one replica's sweeper, past the deadline | `timed_out`, `swept_by`, `ended` "expired" |

Watching the bucket is how a console follows the inbox without polling: `state` names where a question is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from saip.common.approval_sentences import NOT_WAITING
from saip.gateway.errors import ServiceRefused
from saip.v1 import gateway_pb2

# Why a question left the waiting ones (`PendingQuestion.ended`), and `state`'s word for one still waiting.
ANSWERED = "answered"
EXPIRED = "expired"
WITHDRAWN = "withdrawn"
WAITING = "waiting"


@dataclass(frozen=True)
class Parked:
    """One question in the store (out with its 2026-07-28 client, or waiting out of band), at the revision read."""

    nonce: str
    question: gateway_pb2.PendingQuestion
    revision: int


class QuestionStore(Protocol):
    """The questions out with their 2026-07-28 clients and those waiting for the person out of band, shared by
    every replica."""

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        """Keep a question that went back to its client (with its TIMEOUT record made ready) or waits out of band."""
        ...

    async def settle(self, nonce: str, ended: str = ANSWERED) -> bool:
        """Take the question back for the call that it ended (`ended`: why, when no answer came): False when a
        sweeper already recorded it as TIMEOUT (a question never parked, the store being away, is the caller's)."""
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

    async def answer(self, nonce: str, decision: str, now: float, via: str) -> gateway_pb2.PendingQuestion:
        """The person's out-of-band answer (`via`: their interface) to a question still waiting; ServiceRefused says
        why one is not."""
        ...

    async def hand_over(self, nonce: str, client: str) -> bool:
        """Make a question out with its client the person's, out of band: False when it is not parked or is over."""
        ...


class NoQuestions:
    """A store that keeps nothing (a gate without NATS, in the tests): every answer is the caller's to record, and
    an unanswered question is recorded only if its client comes back after the wait."""

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        return None

    async def settle(self, nonce: str, ended: str = ANSWERED) -> bool:
        return True

    async def expire(self, parked: Parked, replica: str) -> bool:
        return False

    async def watch(self) -> AsyncIterator[Parked | str | None]:
        yield None

    async def stored(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        return None

    async def answer(self, nonce: str, decision: str, now: float, via: str) -> gateway_pb2.PendingQuestion:
        raise ServiceRefused(NOT_WAITING.format(id=nonce))

    async def hand_over(self, nonce: str, client: str) -> bool:
        return False


def state(question: gateway_pb2.PendingQuestion, now: float) -> str:
    """Where a question is: waiting, answered (by the person out of band, or its call took the client's answer),
    expired or withdrawn."""
    if question.answer:
        return ANSWERED
    if question.ended:
        return question.ended
    if question.timed_out or question.deadline <= now:
        return EXPIRED
    return WAITING


def waiting(question: gateway_pb2.PendingQuestion, now: float) -> bool:
    """Whether a question waits for the person: out of band, and nothing has ended it."""
    return question.out_of_band and not question.settled and state(question, now) == WAITING


def settled(question: gateway_pb2.PendingQuestion, ended: str, now: float) -> gateway_pb2.PendingQuestion | None:
    """The question taken back by its call (None: a sweeper claimed it first); an answer given is what ended it."""
    if question.timed_out:
        return None
    changed = _copy(question)
    changed.settled = True
    if not changed.ended:
        changed.ended, changed.ended_at = (ANSWERED if question.answer else ended), now
    return changed


def claimed(question: gateway_pb2.PendingQuestion, replica: str, now: float) -> gateway_pb2.PendingQuestion:
    """The question as a sweeper claims it once its deadline passed: its TIMEOUT record is this replica's to publish."""
    changed = _copy(question)
    changed.timed_out, changed.swept_by = True, replica
    if not changed.ended:
        changed.ended, changed.ended_at = EXPIRED, now
    return changed


def answered(
    question: gateway_pb2.PendingQuestion, decision: str, now: float, via: str
) -> gateway_pb2.PendingQuestion | None:
    """The person's answer, if the question still waits for one (None: it does not, and nothing changes)."""
    if not waiting(question, now):
        return None
    changed = _copy(question)
    changed.answer, changed.answered_at, changed.answered_via = decision, now, via
    return changed


def handed_over(question: gateway_pb2.PendingQuestion, client: str) -> gateway_pb2.PendingQuestion | None:
    """The question made the person's, out of band (None: it is over already)."""
    if question.settled or question.timed_out or question.ended:
        return None
    changed = _copy(question)
    changed.out_of_band, changed.client = True, client
    return changed


def _copy(question: gateway_pb2.PendingQuestion) -> gateway_pb2.PendingQuestion:
    changed = gateway_pb2.PendingQuestion()
    changed.CopyFrom(question)
    return changed
