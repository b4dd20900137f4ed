"""What asking the person is made of, in both protocol eras: the decisions, the client's answer, the era's channel to
the person (`Interaction`), what an approval binds, and what came of asking (a question to return, a decision, or a
rejected answer). `surface.asking.Approvals` asks with these; every gate shares them.

2025-11-25 clients have a back channel: the question is pushed as `elicitation/create` and the call waits. 2026-07-28
clients have none: the call returns the question (`InputRequiredResult`) with a state that binds the tool, the
canonical arguments' hash, the revisions its plan read (`surface.expected`), a one-shot nonce and an expiry, which the
client brings back with its answer.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum, nonmember
from typing import Any, Protocol

from saip.common import words
from saip.common.approval_form import CANCEL, approves, arguments_hash, said
from saip.gateway.surface.expected import NOTHING, Expected
from saip.gateway.surface.protobuf_value import ProtobufValue


class Decision(StrEnum):
    """The person's decisions, in the words of saip.common.words.DECISIONS (as management's Level and Outcome are
    in theirs)."""

    APPROVED = "approved"
    DECLINED = "declined"
    TIMEOUT = "timeout"
    ELICIT_FAILED = "elicit-failed"
    DENIED = "denied"

    proto = nonmember(ProtobufValue(words.DECISIONS))


@dataclass(frozen=True)
class Answer:
    """The client's reply to the question: accept / decline / cancel, with the form's content."""

    action: str
    content: dict[str, Any] | None = None

    @property
    def approves(self) -> bool:
        return approves(self.action, self.content)

    @property
    def dismissed(self) -> bool:
        """No decision: the question was dismissed (`cancel`), not declined."""
        return self.action == CANCEL

    @property
    def said(self) -> str:
        """What the answer came to, in the words of the sentence that quotes it."""
        return said(self.action, self.content)


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


# Who answered a question, as its record says (`answered_via`): the person at the AI's own client; the client by
# itself, sooner than a person can read the question; or the person out of band, through one of their interfaces
# (rest, cli, console), or OUT_OF_BAND when the store does not say which.
BY_CLIENT = "client"
CLIENT_ITSELF = "client-itself"
OUT_OF_BAND = "out-of-band"


@dataclass(frozen=True)
class Binding:
    """What an approval is for: one tool with exactly these arguments, over the server state its plan read."""

    tool: str
    arguments_hash: str
    expected: Expected = NOTHING

    @classmethod
    def of(cls, tool: str, arguments: dict[str, Any] | None, expected: Expected = NOTHING) -> Binding:
        return cls(tool, arguments_hash(arguments), expected)

    def revisions(self) -> dict[str, str]:
        """The revisions its plan read, by subject, as the question store keeps them."""
        return {str(subject): str(revision) for subject, revision in self.expected.claims()}


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
    # What the parked question shows the person: its level, and what it binds.
    level: str = ""
    binding: Binding | None = None


@dataclass(frozen=True)
class Decided:
    """What the person decided, and how long the question waited. `recorded`: a sweeper already put this (a TIMEOUT)
    on the trail, so the call that learns it records nothing more."""

    decision: Decision
    waited: float = 0.0
    detail: str = ""  # why it could not be asked; or, answered by the client itself, what it answered
    recorded: bool = False
    via: str = ""  # who answered: BY_CLIENT, CLIENT_ITSELF, or the person's interface out of band
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
