"""The approval question's form, as saip puts it to a person through MCP elicitation: one ticked choice
(`APPROVAL_SCHEMA`), what counts as an approval (`approves`), what an answer came to (`said`) and what an approval
binds of a call's arguments (`arguments_hash`). The gateway's gate and a shipped server's gate ask with these; the
question's text and the sentences of its outcomes are `saip.common.approval_sentences`'. An answer sooner than
`MIN_ANSWER_SECONDS` after its question is the client's own: no person reads a question that fast."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from saip.common.canonical import sha256_of

INPUT_KEY = "approval"  # the key of the question in a 2026-07-28 InputRequiredResult, and of its answer on retry
APPROVE_FIELD = "approve"
RUN = "run"
CANCEL = "cancel"  # a dismissal: no decision
# management.min-answer-ms's default: headless clients answer their own questions in about 20 ms.
MIN_ANSWER_SECONDS = 0.5

# One required field, a single choice "Run this call" that arrives ticked: a person reads and clicks Accept; a client
# that fills empty forms by itself sends no tick, which is a decline.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [APPROVE_FIELD],
    "properties": {
        APPROVE_FIELD: {
            "type": "array",
            "title": "Approve",
            "description": "Keep 'Run this call' ticked and accept to run it; untick or decline to refuse.",
            "items": {"anyOf": [{"const": RUN, "title": "Run this call"}]},
            "default": [RUN],
            "maxItems": 1,
        }
    },
}


def approves(action: str, content: Mapping[str, Any] | None) -> bool:
    """An accepted form with 'Run this call' still ticked; anything else refuses."""
    ticked = (content or {}).get(APPROVE_FIELD)
    return action == "accept" and isinstance(ticked, list) and ticked == [RUN]


def said(action: str, content: Mapping[str, Any] | None) -> str:
    """What an answer came to, in the words of the sentence that quotes it (`approval_sentences.ANSWERED_ITSELF`)."""
    return "accepted" if approves(action, content) else "dismissed" if action == CANCEL else "declined"


def arguments_hash(arguments: Mapping[str, Any] | None) -> str:
    """What an approval binds of a call's arguments: the SHA-256 of their canonical JSON, so an answer given for one
    set of arguments never runs another."""
    return sha256_of(dict(arguments or {}), ascii=True)
