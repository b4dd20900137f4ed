"""The state of a served tool's own question for a 2026-07-28 caller: the call parked at an upstream's question on a
tools replica (`saip.tools.upstream.parking`), and what the caller's retry must bring back to resume it.

The state names the parked call, the tool, the canonical arguments' hash (`approval_form.arguments_hash`, as the
gate binds its own question), a one-shot nonce and the wait's end; it carries when the call started and what the
person decided at saip's own question before it ran, so the one record of the call, written when it ends, says so.
The MCP SDK seals the state with `approval.sealing-key` and binds it to the caller's token, exactly as the gate's
own: a state that does not verify never reaches the gate, and one for another tool or other arguments is refused
here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from saip.common import jsondepth
from saip.common.approval_form import arguments_hash
from saip.common.approval_sentences import UPSTREAM_EXPIRED
from saip.gateway.surface.approval import Answer, Asked, Decided, Decision, Interaction, new_nonce
from saip.gateway.surface.audited import Call
from saip.v1 import common_pb2

_VERSION = 1


@dataclass(frozen=True)
class ParkedState:
    """The claims of a parked call's question, unsealed by the SDK."""

    parked_id: str
    tool: str
    arguments: str
    nonce: str
    asked_at: float
    deadline: float
    started: float
    decision: Decided | None

    def binds(self, call: Call) -> bool:
        """Whether the retry is the same call: the same tool with exactly the same arguments."""
        return self.tool == call.tool and self.arguments == arguments_hash(call.arguments)


def parked_state(interaction: Interaction) -> ParkedState | None:
    """The parked call a 2026-07-28 retry answers, else None (a first call, or the gate's own question's state)."""
    if not interaction.roundtrip or interaction.state is None:
        return None
    try:
        claims = json.loads(interaction.state)
    except ValueError:
        return None
    if not isinstance(claims, dict) or claims.get("parked") != _VERSION:
        return None
    decided = claims.get("d")
    try:
        decision = Decided(Decision(decided[0]), float(decided[1]), via=str(decided[2])) if decided else None
        return ParkedState(
            str(claims["p"]),
            str(claims["t"]),
            str(claims["a"]),
            str(claims["n"]),
            float(claims["iat"]),
            float(claims["exp"]),
            float(claims["st"]),
            decision,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def question_of(call: Call, question: common_pb2.ServedQuestion, wait: float, said: str) -> Asked:
    """The parked call's question as it goes back to the caller, with the state its retry brings back; parked where
    every gateway replica sees it, so a question nobody answers is recorded (as TIMEOUT) once its `wait` (`said` as
    its sentence says it) is over."""
    now = time.time()
    nonce = new_nonce()
    decided = call.decision
    claims: dict[str, Any] = {
        "parked": _VERSION,
        "p": question.parked_id,
        "t": call.tool,
        "a": arguments_hash(call.arguments),
        "n": nonce,
        "iat": now,
        "exp": now + wait,
        "st": call.started,
        "d": [decided.decision.value, decided.waited, decided.via] if decided is not None else None,
    }
    try:
        schema = question_schema(question)
    except ValueError:  # the tools service sends what the SDK parsed; anything else is a form of no fields
        schema = {}
    return Asked(
        question.message,
        schema,
        json.dumps(claims, separators=(",", ":")),
        nonce,
        now,
        now + wait,
        UPSTREAM_EXPIRED.format(tool=call.tool, wait=said),
        relayed=True,
    )


def answer_of(interaction: Interaction) -> common_pb2.ServedAnswer:
    """The retry's answer as the parked call reads it (no answer: a cancel)."""
    return served_answer(interaction.answer)


# Both eras' relay of a served tool's own question: the 2025-11-25 one asks it on the caller's session and answers
# it by its id on the same stream, this module's resumes the parked call with it.


def question_schema(question: common_pb2.ServedQuestion) -> dict[str, Any]:
    """The form a served tool's question asks for (a ValueError when its JSON does not parse)."""
    schema = jsondepth.loads(question.requested_schema_json or "{}")
    return schema if isinstance(schema, dict) else {}


def served_answer(answer: Answer | None, question_id: int = 0) -> common_pb2.ServedAnswer:
    """The caller's answer to a served tool's question as its service reads it (no answer: a cancel)."""
    if answer is None:
        return common_pb2.ServedAnswer(id=question_id, action="cancel")
    content = json.dumps(answer.content, ensure_ascii=False) if answer.content is not None else ""
    return common_pb2.ServedAnswer(id=question_id, action=answer.action, content_json=content)
