"""The approval question of a tool call, as saip puts it to a person through MCP elicitation: the form (one ticked
choice, `APPROVAL_SCHEMA`), what counts as an approval (`approves`) and the published-tool question's text
(`tool_question`). The gateway's gate and a shipped server's gate ask with these, so a person reads one question
whichever of them asks."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from saip.common.canonical import sha256_of
from saip.common.masking import Masker

INPUT_KEY = "approval"  # the key of the question in a 2026-07-28 InputRequiredResult, and of its answer on retry
APPROVE_FIELD = "approve"
RUN = "run"

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


def arguments_hash(arguments: Mapping[str, Any] | None) -> str:
    """What an approval binds of a call's arguments: the SHA-256 of their canonical JSON, so an answer given for one
    set of arguments never runs another."""
    return sha256_of(dict(arguments or {}), ascii=True)


def seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def within(wait: float, full: float) -> str:
    """A question's wait as its sentences say it: `full` (the wait as it is set) as it is, a wait a deadline cut
    shorter in whole seconds rounded up, so the text stays true (`2 s`, not 180)."""
    return seconds(full) if wait >= full else str(math.ceil(wait))


class _Placeholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def tool_question(
    level: int, client: str, tool: str, prompt_template: str, arguments: Mapping[str, Any], wait: float
) -> str:
    """`[risk Ln] <client> wants to run <tool>: <prompt>. Answer within <wait> s, or the call is refused.`

    The prompt is the tool's own template with {name} placeholders filled from the (masked) arguments, or the
    arguments themselves.
    """
    masked = Masker().value(dict(arguments))
    if prompt_template:
        values = _Placeholders({key: _plain(value) for key, value in masked.items()})
        try:
            prompt = prompt_template.format_map(values)
        except (ValueError, IndexError, AttributeError):
            prompt = prompt_template
    else:
        prompt = f"run it with {json.dumps(masked, ensure_ascii=False, sort_keys=True)[:500]}"
    return (
        f"[risk L{level}] {client} wants to run {tool}: {prompt.rstrip('.')}. "
        f"Answer within {seconds(wait)} s, or the call is refused."
    )


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
