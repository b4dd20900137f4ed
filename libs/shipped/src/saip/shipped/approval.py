"""The shipped server's approval gate: a bundled tool whose exposure had HITL on (`hitl` in its part) asks the person
at the client before it runs, through MCP elicitation, using the SDK as the gateway does:

- 2025-11-25: `elicitation/create` on the call's back channel (`session.elicit_form`); the call waits for the answer
  at most `wait` seconds.
- 2026-07-28: the call returns the question (`InputRequiredResult`, the form under `approval`) with a request state
  naming the tool, the hash of the canonical arguments and a one-shot nonce; the SDK's `RequestStateBoundary` seals
  it (expiring after `wait` seconds) and unseals it when the client calls again with its answer.

The question, its form and the sentences of its outcomes are the gateway's for a published tool
(`saip.common.approval_form`, `saip.common.approval_sentences`). A client that declared no elicitation capability is not
asked: the call is denied with the gateway's sentence. An answer sooner than `min_answer` after its question
(`--min-answer-ms`, 500 ms by default, as the gateway's management.min-answer-ms) is the client's own, as a
headless client gives it (`claude -p` answers in about 20 ms): the call is denied with the gateway's sentence for it,
and a dismissal is a decline. The shipped server keeps no audit trail and has no out-of-band path (it runs outside
saip, where the person chose): the question is the person's at their client, or nobody's. Spent nonces are this
process's; the sealing key of an HTTP server comes from its bearer token, so replicas read each other's questions.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from saip.common.approval_form import APPROVAL_SCHEMA, INPUT_KEY, MIN_ANSWER_SECONDS, approves, arguments_hash, said
from saip.common.approval_sentences import (
    ANSWERED_ITSELF,
    DECLINED,
    DENIED,
    ELICIT_FAILED,
    MISMATCH,
    REPLAYED,
    TIMEOUT,
    client_label,
    seconds,
    tool_question,
)

WAIT_SECONDS = 120.0


Stopped = types.CallToolResult | types.InputRequiredResult


def refused(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def boundary(token: str | None, wait: float) -> RequestStateBoundary:
    """The SDK's sealing of 2026-07-28 request state: under a key derived from the bearer token (every replica of
    one server has it) or, over stdio, one made for this process."""
    if token:
        key = hashlib.sha256(b"saip-shipped request state\0" + token.encode()).hexdigest()
        security = RequestStateSecurity(keys=[key], ttl=wait, bind_principal=None)
    else:
        security = RequestStateSecurity.ephemeral(ttl=wait)
    return RequestStateBoundary(security, default_audience="saip-shipped")


class Gate:
    """Asks the person before a HITL tool runs; `wait` is how long they have to answer, in both eras, and an answer
    sooner than `min_answer` seconds is the client's own."""

    def __init__(
        self, wait: float = WAIT_SECONDS, min_answer: float = MIN_ANSWER_SECONDS, clock: Callable[[], float] = time.time
    ) -> None:
        self.wait = wait
        self.min_answer = min_answer
        self._clock = clock
        self._spent: dict[str, float] = {}  # nonce -> when it expires (kept that long)

    async def check(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        level: int,
        prompt_template: str,
    ) -> Stopped | None:
        """None when the person approved the call; else what the call answers instead (the 2026-07-28 question,
        or the sentence of why it was not run)."""
        tool, arguments = params.name, dict(params.arguments or {})
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return refused(DENIED.format(tool=tool))
        client = _client(ctx)
        message = tool_question(level, client, tool, prompt_template, arguments, self.wait)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self.roundtrip(params, message)
        asked = self._clock()
        try:
            with anyio.fail_after(self.wait):
                answer = await ctx.session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=ctx.request_id)
        except TimeoutError:
            return refused(TIMEOUT.format(tool=tool, wait=seconds(self.wait)))
        except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            return refused(ELICIT_FAILED.format(tool=tool, reason=str(exc) or type(exc).__name__))
        return self._decided(tool, answer, self._clock() - asked)

    def roundtrip(self, params: types.CallToolRequestParams, message: str) -> Stopped | None:
        """2026-07-28: the question with its state (the call it binds, a nonce, when it was asked) on the first call;
        on the retry (its state unsealed by the SDK) None when the answer approves this very call, once, and came no
        sooner than `min_answer` after the question."""
        tool, digest = params.name, arguments_hash(params.arguments or {})
        if params.request_state is None:
            bound = {"t": tool, "a": digest, "n": secrets.token_urlsafe(18), "iat": self._clock()}
            state = json.dumps(bound, separators=(",", ":"))
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
            )
            return types.InputRequiredResult(input_requests={INPUT_KEY: request}, request_state=state)
        # The SDK unsealed the state: it is this server's, unexpired, and for this request.
        try:
            claims = json.loads(params.request_state)
        except ValueError:
            claims = None
        if not isinstance(claims, dict) or (claims.get("t"), claims.get("a")) != (tool, digest):
            return refused(MISMATCH.format(tool=tool))
        issued = claims.get("iat")
        if not isinstance(issued, int | float):
            return refused(MISMATCH.format(tool=tool))
        if not self._spend(str(claims.get("n"))):
            return refused(REPLAYED.format(tool=tool))
        response = (params.input_responses or {}).get(INPUT_KEY)
        if not isinstance(response, types.ElicitResult):
            return refused(DECLINED.format(tool=tool))
        return self._decided(tool, response, self._clock() - issued)

    def _decided(self, tool: str, answer: types.ElicitResult, waited: float) -> types.CallToolResult | None:
        """None when the answer approves and a person could have given it; else the sentence of why not."""
        if waited < self.min_answer:
            ms = round(max(waited, 0.0) * 1000)
            return refused(ANSWERED_ITSELF.format(tool=tool, answer=said(answer.action, answer.content), ms=ms))
        return None if approves(answer.action, answer.content) else refused(DECLINED.format(tool=tool))

    def _spend(self, nonce: str) -> bool:
        now = self._clock()
        self._spent = {spent: until for spent, until in self._spent.items() if until > now}
        if nonce in self._spent:
            return False
        self._spent[nonce] = now + self.wait
        return True


def _client(ctx: ServerRequestContext[Any, Any]) -> str:
    params = ctx.session.client_params
    info = params.client_info if params else None
    return client_label(info.name, info.version or "") if info else client_label("", "")
