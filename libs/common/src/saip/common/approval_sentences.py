"""Every sentence of saip's approvals: the questions put to the person, and what a call answers when it does not run.

The gateway's gate (management tools), its published tools' and chat turns' gate, and a shipped server's gate all say
these, so a person reads one question and an AI one refusal whichever of them asks. The question, DECLINED, TIMEOUT,
the head of DENIED, the loopback and `none` refusals and the unexpected error are the seed's texts, word for word
(docs/management.md, "What the AI receives when a call does not run"); each other sentence says what to do instead.
Templates take `{tool}` (the name the call named) and the values their sentence names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from saip.common.masking import Masker

QUESTION_ARGUMENTS = 500  # characters of a question's (masked) arguments when it quotes them

# What the person decided, or the absence of one (the seed's outcomes).
DECLINED = "Tool '{tool}' was not run: the user declined. Do not retry it for this request."
TIMEOUT = (
    "Tool '{tool}' was not run: no approval within {wait} s. Do not retry it for this request; "
    "ask the user to run it from the app if it is still needed."
)
DENIED = (
    "Tool '{tool}' was not run: it needs human approval and this client cannot ask for it (no elicitation support). "
    "Do not retry it from this client; ask the user to run it from the app, or to connect a client that supports "
    "MCP elicitation."
)
ELICIT_FAILED = "Tool '{tool}' was not run: the approval question could not be asked ({reason}). Do not retry it."
# An answer the client gave by itself, sooner than a person can read the question (management.min-answer-ms): DENIED,
# as for a client that cannot ask, since no person decided (an extension of the seed, docs/management.md).
ANSWERED_ITSELF = (
    "Tool '{tool}' was not run: it needs human approval and this client answered the question by itself (it {answer} "
    "it {ms} ms after it was asked, sooner than a person can read it), so no person decided. Do not retry it from "
    "this client; ask the user to run it from the app, or to answer the client's questions themselves."
)

# The gate's own rules, before anyone is asked (REFUSED).
LOOPBACK = "Tool '{tool}' was not run: it is not available to this app's own chat."
NOT_GRANTED = (
    "Tool '{tool}' was not run: this client's credential ({credential}) is granted the published tools only. Do not "
    "retry it; ask the user to give this client the management grant: approve its sign-in again with the grant "
    "'manage', or give it a named token made with `saip clients add NAME --scope manage`."
)
HIGH_RISK_UNDER_NONE = (
    "Tool '{tool}' was not run: this is a high-risk action and needs a human decision, but approval is disabled "
    "(management.approval=none). Ask the user to run it from the app."
)
RATE_LIMITED = (
    "Tool '{tool}' was not run: this client made {limit} management calls within {window} s, the limit "
    "(management.rate-limit). Try again in {retry} s, and make fewer calls: read a page of results instead of one "
    "call per item."
)
TOO_MANY_QUESTIONS = (
    "Tool '{tool}' was not run: this client asked the person {limit} questions within {window} s, the limit "
    "(management.question-limit). Batch your work: plan the whole change, then make fewer calls that need approval "
    "(one publish of a finished tool rather than many small steps). Try again in {retry} s."
)

# An answer that does not belong to the call it comes with (a 2026-07-28 retry), or to the state it describes.
REPLAYED = "Tool '{tool}' was not run: this approval was already used. Call the tool again to ask the user afresh."
MISMATCH = (
    "Tool '{tool}' was not run: the approval answered a different call. Call the tool again to ask the user afresh."
)
CHANGED = "Tool '{tool}' was not run: {change}."
# A served tool's own question (an upstream's) the call parked at for a 2026-07-28 caller.
UPSTREAM_MISMATCH = (
    "Tool '{tool}' was not run: this answer belongs to the upstream's question of another call (another tool or other "
    "arguments). Call the tool again to ask afresh."
)
UPSTREAM_EXPIRED = (
    "Tool '{tool}' was not completed: nobody answered the upstream's question within {wait} s, so the call was "
    "cancelled. Call the tool again if it is still needed."
)

# A call that started and did not finish, or failed in a way nobody planned for.
ABANDONED = "Tool '{tool}' was not completed: the client went away before the call finished."
CUT = (
    "Tool '{tool}' was not completed: the chat turn that called it reached its timeout first. Ask again with a longer "
    "timeoutSeconds if it is still needed."
)
UNEXPECTED = "Unexpected error: {message}"

# The person's side of out-of-band approvals.
NOT_WAITING = (
    "No question '{id}' is waiting for an answer (answered, expired or never asked); saip approvals lists them."
)


def seconds(value: float) -> str:
    """A number of seconds as the sentences write it: `180`, `2.5`."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def within(wait: float, full: float) -> str:
    """A question's wait as its sentences say it: `full` (the wait as it is set) as it is, a wait a deadline cut
    shorter in whole seconds rounded up, so the text stays true (`2 s`, not 180)."""
    return seconds(full) if wait >= full else str(math.ceil(wait))


def countdown(remaining: float) -> str:
    """The progress a waiting 2025-11-25 call reports while the person decides."""
    return f"Waiting for approval: {max(0, math.ceil(remaining))} s left"


def client_label(name: str, version: str) -> str:
    """The client as a question names it: its name and version from the handshake (or the request envelope)."""
    return " ".join(part for part in (name, version) if part) or "an unidentified client"


def changed_since_asked(what: str, asked: object, now: object) -> str:
    """The refusal of a change whose approval described another state of what it changes: the gateway and every
    service say it in the same words (approvals bind what they describe, docs/architecture.md)."""
    return f"{what} changed since the question was asked (revision {asked}, now {now}); read it again and ask again"


def management_question(level: str, client: str, tool: str, summary: str, wait: float) -> str:
    """`[LEVEL] <client> wants to run <tool>: <summary>. Answer within <wait> s, or the call is refused.`"""
    return f"[{level}] {client} wants to run {tool}: {summary.rstrip('.')}. {_answer_within(wait)}"


def tool_question(
    level: int, client: str, tool: str, prompt_template: str, arguments: Mapping[str, Any], wait: float
) -> str:
    """`[risk Ln] <client> wants to run <tool>: <prompt>. Answer within <wait> s, or the call is refused.`: a
    published (or shipped) tool's question. The prompt is the tool's own template with {name} placeholders filled
    from the masked arguments, or the arguments themselves."""
    masked = Masker().value(dict(arguments))
    if prompt_template:
        values = _Placeholders({key: _plain(value) for key, value in masked.items()})
        try:
            prompt = prompt_template.format_map(values)
        except (ValueError, IndexError, AttributeError):
            prompt = prompt_template
    else:
        prompt = f"run it with {_quoted(masked)}"
    return f"[risk L{level}] {client} wants to run {tool}: {prompt.rstrip('.')}. {_answer_within(wait)}"


def chat_question(level: int, tool: str, arguments: Mapping[str, Any]) -> str:
    """`[risk Ln] Chat turn started by this client wants to run a tool. Run '<tool>' with <arguments>?`: the question
    of a gated tool a chat turn wants to run, put to the client that started the turn."""
    masked = Masker().value(dict(arguments))
    return f"[risk L{level}] Chat turn started by this client wants to run a tool. Run '{tool}' with {_quoted(masked)}?"


def _answer_within(wait: float) -> str:
    return f"Answer within {seconds(wait)} s, or the call is refused."


def _quoted(masked: Any) -> str:
    return json.dumps(masked, ensure_ascii=False, sort_keys=True)[:QUESTION_ARGUMENTS]


class _Placeholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
