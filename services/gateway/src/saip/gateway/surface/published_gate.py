"""The gate of published tools: each call of a tool a serving service publishes on /mcp, through the tool's own gate.

A tool with HITL REQUIRED asks the person through the same code as the management gate (both eras, same outcome
sentences), then the owning service runs it (`surface.served`), and one ToolCall record, masked, lands on the audit
trail through the same audited-call core.

A 2026-07-28 caller asked a served tool's own question gets it with a state the SDK seals and binds to its token
(`surface.parked`), naming the parked call, the tool, the canonical arguments' hash, a one-shot nonce and the call's
start and approval; its retry with the answer resumes the parked call, and the call is recorded once, when it ends (or
by the sweeper of parked questions, as TIMEOUT, when nobody answers). A chat turn's call is the client's that started
the turn: asked through the turn's interaction (2025-11-25), or parked with the turn stopped at its question
(2026-07-28).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from saip.common import approval_sentences, jsondepth
from saip.common.approval_sentences import REPLAYED, UPSTREAM_EXPIRED, UPSTREAM_MISMATCH
from saip.common.masking import mask_quoted
from saip.gateway.surface import parked
from saip.gateway.surface.approval import Asked, Decided, Decision, Interaction
from saip.gateway.surface.asking import Approvals
from saip.gateway.surface.audited import Auditor, Ended, Failed, PublishedToolCall
from saip.gateway.surface.gate import GateResult, consult
from saip.gateway.surface.management import Caller, Outcome
from saip.gateway.surface.served import ServedToolsClient
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)


def question_for(spec: common_pb2.ServedTool, caller: Caller, arguments: Mapping[str, Any], wait: float) -> str:
    """The question of a published tool that asks: the chat's for a chat turn's call, else the published-tool
    question shipped servers ask too (`saip.common.approval_sentences`)."""
    if caller.chat:
        return approval_sentences.chat_question(spec.risk_level, spec.name, arguments)
    return approval_sentences.tool_question(spec.risk_level, caller.label, spec.name, spec.hitl_prompt, arguments, wait)


class PublishedTools:
    """The gate of published tools: the HITL question when the tool asks for one, the call, the audit record.
    A chat turn's calls (`caller.chat`) pass it too, with the chat's question and on the chat side of the meter."""

    def __init__(self, *, approvals: Approvals, auditor: Auditor) -> None:
        self.approvals = approvals
        self._auditor = auditor

    async def execute(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        arguments: dict[str, Any] | None,
        caller: Caller,
        interaction: Interaction,
    ) -> GateResult:
        call = PublishedToolCall(spec.name, caller, dict(arguments or {}), source=spec.source, proxied=proxied_of(spec))
        ended = await self._auditor.run(call, lambda: self._run(spec, client, call, interaction))
        if isinstance(ended, Asked):
            return GateResult(question=ended)
        if ended.warning:
            logger.warning("tool call record not stored durably", extra={"tool": spec.name})
        answer = ended.answer
        if answer.is_error and answer.text:  # a refusal or failure may quote the arguments; a tool's answer is data
            return replace(answer, text=mask_quoted(answer.text, call.arguments))
        return answer

    async def _run(
        self, spec: common_pb2.ServedTool, client: ServedToolsClient, call: PublishedToolCall, interaction: Interaction
    ) -> Ended[GateResult] | Asked:
        arguments = call.arguments or {}
        state = parked.parked_state(interaction)
        if state is not None:  # a 2026-07-28 retry answering the question its call parked at: past the gate already
            return await self._resumed(spec, client, call, interaction, state)
        if spec.hitl_required:
            text = question_for(spec, call.caller, arguments, self.approvals.wait_seconds)
            verdict = await consult(self.approvals, interaction, call, text, f"L{spec.risk_level}")
            if verdict.asked is not None:
                return verdict.asked
            if verdict.refusal is not None:
                return _failed(verdict.refusal, verdict.outcome)
        return await self._ran(spec, client, call, interaction)

    async def _ran(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        call: PublishedToolCall,
        interaction: Interaction,
        resume: common_pb2.ServedResume | None = None,
    ) -> Ended[GateResult] | Asked:
        """The call at its service (or the parked call `resume` answers), until its reply or its next question, which
        parks the call for the approval wait (less when a chat turn's deadline comes sooner)."""
        arguments, wait = call.arguments or {}, self.approvals.wait_for(call.caller)
        ran = await self._auditor.attempt(
            call, lambda: client.call(spec.name, arguments, call.caller, interaction, park=wait, resume=resume)
        )
        if isinstance(ran, Failed):
            return _failed(ran.message, Outcome.ERROR)
        if isinstance(ran, common_pb2.ServedQuestion):
            left = self.approvals.wait_for(call.caller)  # a chat turn's time went on while the call ran to its question
            return parked.question_of(call, ran, left, self.approvals.said(left))
        result = GateResult(text=ran.text, structured=_object(ran.structured_json), is_error=ran.is_error)
        return Ended(result, Outcome.ERROR if ran.is_error else Outcome.OK, ran.text)

    async def _resumed(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        call: PublishedToolCall,
        interaction: Interaction,
        state: parked.ParkedState,
    ) -> Ended[GateResult] | Asked:
        """Hand the retry's answer to the parked call, which goes on; the call is the one that started, so its record
        keeps its start and the person's decision at saip's own question."""
        if not state.binds(call) or call.proxied is None:  # only an exposed upstream tool's call parks
            return _failed(UPSTREAM_MISMATCH.format(tool=spec.name), Outcome.REFUSED)
        if not await self.approvals.spend(state.nonce, spec.name):
            return _failed(REPLAYED.format(tool=spec.name), Outcome.REFUSED)
        call.started, call.decision = state.started, state.decision
        had = self.approvals.said(round(state.deadline - state.asked_at, 3))
        expired = UPSTREAM_EXPIRED.format(tool=spec.name, wait=had)
        if not await self.approvals.pending.settle(state.nonce):
            # A sweeper recorded the unanswered question as TIMEOUT first: the call ended there.
            call.decision = replace(call.decision or Decided(Decision.TIMEOUT), recorded=True)
            return _failed(expired, Outcome.TIMEOUT)
        if time.time() > state.deadline:  # the tools replica dropped the parked call at the same wait
            return _failed(expired, Outcome.TIMEOUT)
        resume = common_pb2.ServedResume(
            parked_id=state.parked_id,
            name=spec.name,
            answer=parked.answer_of(interaction),
        )
        return await self._ran(spec, client, call, interaction, resume)


def proxied_of(spec: common_pb2.ServedTool) -> events_pb2.ProxiedCall | None:
    """An exposed upstream tool's ProxiedCall: which server and which of its tools the name on /mcp stands for."""
    if not spec.upstream_server:
        return None
    return events_pb2.ProxiedCall(server=spec.upstream_server, tool=spec.upstream_tool, alias=spec.name)


def _failed(message: str, outcome: Outcome) -> Ended[GateResult]:
    return Ended(GateResult(text=message, is_error=True), outcome, message)


def _object(text: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = jsondepth.loads(text)
    except ValueError:  # not JSON, or nested deeper than saip reads: sent as text only
        return None
    return value if isinstance(value, dict) else None
