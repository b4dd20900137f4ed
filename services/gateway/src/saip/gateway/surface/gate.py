"""The approval gate: the one function every management call passes, and asking the person, which the published
tools' gate shares.

caller -> the per-client call limit -> strict arguments -> approval plan (level, summary, high risk) x mode
-> maybe a question to the person -> the contribution's handler -> the result envelope -> one audit record
(acknowledged) -> the answer to the AI.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from saip.common import tracing
from saip.common.approval_sentences import (
    ANSWERED_ITSELF,
    CHANGED,
    DECLINED,
    DENIED,
    ELICIT_FAILED,
    HIGH_RISK_UNDER_NONE,
    LOOPBACK,
    MISMATCH,
    NOT_GRANTED,
    RATE_LIMITED,
    REPLAYED,
    TIMEOUT,
    TOO_MANY_QUESTIONS,
    management_question,
    seconds,
)
from saip.common.masking import Masker, mask_quoted
from saip.gateway.config import ApprovalMode
from saip.gateway.errors import InvalidArguments, ServiceRefused, ServiceUnavailable, sentence
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import (
    Asked,
    Binding,
    Decided,
    Decision,
    Interaction,
    Rejected,
    StateProblem,
)
from saip.gateway.surface.asking import Approvals, Question
from saip.gateway.surface.audited import Auditor, Call, Ended, Failed, ManagementToolCall
from saip.gateway.surface.expected import NOTHING, Expected
from saip.gateway.surface.limits import WindowLimit, seconds_left
from saip.gateway.surface.management import Approval, Caller, Level, ManagementResult, ManagementTool, Outcome

_SPANS = tracing.tracer("gateway")


class Need(Enum):
    RUN = "run"
    ASK = "ask"
    REFUSE = "refuse"


def need_for(approval: Approval, mode: ApprovalMode) -> Need:
    """The mode table, with the high-risk override: always ask, and refuse outright under `none`."""
    if approval.high_risk:
        return Need.REFUSE if mode is ApprovalMode.NONE else Need.ASK
    if mode is ApprovalMode.NONE or approval.level is Level.READ:
        return Need.RUN
    if mode is ApprovalMode.ALL or approval.level is Level.DESTRUCTIVE:
        return Need.ASK
    return Need.RUN


@dataclass(frozen=True)
class Verdict:
    """What asking the person came to: a question to return (2026-07-28), a refusal, or a go-ahead."""

    asked: Asked | None = None
    refusal: str | None = None
    outcome: Outcome = Outcome.OK


async def consult(
    approvals: Approvals, interaction: Interaction, call: Call, text: str, level: str, expected: Expected = NOTHING
) -> Verdict:
    """Put `text` to the person for this call: the one path every gate (management, published tools) takes, so the
    outcomes, their sentences and the HITL meter agree everywhere. `level` is the question's (a management level, a
    published tool's risk), `expected` the server state the text describes (bound into the question). The call keeps
    what the person decided."""
    tool = call.tool
    if not call.caller.elicitation and not approvals.out_of_band:
        call.decision = Decided(Decision.DENIED)
        return Verdict(refusal=DENIED.format(tool=tool), outcome=Outcome.DENIED)
    retry = approvals.question_allowed(interaction, call.caller)
    if retry is not None:
        questions = approvals.questions
        said = TOO_MANY_QUESTIONS.format(
            tool=tool, limit=questions.limit, window=seconds(questions.window), retry=seconds_left(retry)
        )
        return Verdict(refusal=said, outcome=Outcome.REFUSED)
    wait = approvals.wait_for(call.caller)
    # What its record says if nobody answers: by the sweeper (`surface.questions`) for a question that went back to
    # its client, by the call itself when the end of its chat turn cuts the wait.
    expired = TIMEOUT.format(tool=tool, wait=approvals.said(wait))
    call.asking(expired)
    with _SPANS.span("gate ask", attributes={"saip.tool": tool}):
        question = Question(text, Binding.of(tool, call.arguments, expected), call.caller, level)
        asked = await approvals.ask(interaction, question, wait)
    if isinstance(asked, Asked):
        return Verdict(asked=replace(asked, expired=expired))
    if isinstance(asked, Rejected):
        if asked.problem is StateProblem.CHANGED:
            return Verdict(refusal=CHANGED.format(tool=tool, change=asked.detail), outcome=Outcome.REFUSED)
        template = REPLAYED if asked.problem is StateProblem.REPLAYED else MISMATCH
        return Verdict(refusal=template.format(tool=tool), outcome=Outcome.REFUSED)
    call.decision = asked
    match asked.decision:
        case Decision.APPROVED:
            return Verdict()
        case Decision.TIMEOUT:
            if asked.wait is not None:  # a late retry: the wait its question had
                expired = TIMEOUT.format(tool=tool, wait=approvals.said(asked.wait))
            return Verdict(refusal=expired, outcome=Outcome.TIMEOUT)
        case Decision.DENIED:  # the client answered by itself, sooner than a person can
            ms = round(asked.waited * 1000)
            said = ANSWERED_ITSELF.format(tool=tool, answer=asked.detail, ms=ms)
            return Verdict(refusal=said, outcome=Outcome.DENIED)
        case Decision.ELICIT_FAILED:
            reason = Masker().text(asked.detail) or "the client did not answer"
            return Verdict(refusal=ELICIT_FAILED.format(tool=tool, reason=reason), outcome=Outcome.ERROR)
        case _:
            return Verdict(refusal=DECLINED.format(tool=tool), outcome=Outcome.DECLINED)


@dataclass(frozen=True)
class GateResult:
    """What the MCP layer sends back: a finished call (an envelope, or a published tool's text), or a question."""

    envelope: dict[str, Any] | None = None
    is_error: bool = False
    question: Asked | None = None
    # A published tool's own answer (text and structured content), sent as it is instead of an envelope.
    text: str | None = None
    structured: dict[str, Any] | None = None


class Gate:
    def __init__(
        self,
        *,
        mode: ApprovalMode,
        approvals: Approvals,
        auditor: Auditor,
        metrics: GatewayMetrics,
        calls: WindowLimit | None = None,
    ) -> None:
        self.mode = mode
        self.approvals = approvals
        self._auditor = auditor
        self.calls = calls if calls is not None else WindowLimit(0, 60)  # no limit
        self._metrics = metrics

    async def execute(
        self, tool: ManagementTool, arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction
    ) -> GateResult:
        call = ManagementToolCall(tool.name, caller, arguments, category=tool.category, level=tool.level)
        ended = await self._auditor.run(call, lambda: self._run(tool, call, interaction))
        if isinstance(ended, Asked):
            return GateResult(question=ended)
        result = ended.answer.quoting(call.arguments)
        if ended.warning:
            result.warnings.append(ended.warning)
        return GateResult(envelope=result.envelope(), is_error=not result.ok)

    async def _run(
        self, tool: ManagementTool, call: ManagementToolCall, interaction: Interaction
    ) -> Ended[ManagementResult] | Asked:
        name = tool.name
        if call.caller.loopback:
            return _refused(LOOPBACK.format(tool=name), Outcome.REFUSED)
        if not call.caller.manages:
            credential = call.caller.credential.label if call.caller.credential is not None else ""
            return _refused(NOT_GRANTED.format(tool=name, credential=credential), Outcome.REFUSED)
        retry = self.calls.take(call.caller.client)
        if retry is not None:
            self._metrics.limited.labels("calls").inc()
            said = RATE_LIMITED.format(
                tool=name, limit=self.calls.limit, window=seconds(self.calls.window), retry=seconds_left(retry)
            )
            return _refused(said, Outcome.REFUSED)
        try:
            bound = tool.bind(call.arguments)
            with _SPANS.span("gate plan", attributes={"saip.tool": name}):
                approval = call.approval = await tool.approval_for(bound)
        except InvalidArguments as exc:
            return _refused(str(exc), Outcome.REFUSED)
        except (ServiceRefused, ServiceUnavailable) as exc:
            # The plan reads the owning service (a tool that does not exist, a service away): nothing was asked.
            return _refused(str(exc), Outcome.ERROR)
        need = need_for(approval, self.mode)
        if need is Need.REFUSE:
            return _refused(HIGH_RISK_UNDER_NONE.format(tool=name), Outcome.REFUSED)
        if approval.refused:  # the service would refuse it: nobody is asked to approve what cannot happen
            return _refused(sentence(approval.refused), Outcome.ERROR)
        if need is Need.ASK:
            # The summary quotes the arguments: the person reads what the trail keeps of them.
            summary = mask_quoted(approval.summary, call.arguments)
            wait = self.approvals.wait_seconds
            text = management_question(approval.level.value, call.caller.label, name, summary, wait)
            verdict = await consult(self.approvals, interaction, call, text, approval.level.value, approval.expected)
            if verdict.asked is not None:
                return verdict.asked
            if verdict.refusal is not None:
                return _refused(verdict.refusal, verdict.outcome)
        caller = replace(call.caller, progress=interaction.progress, interaction=interaction)
        # The handler gets the state the plan read, asked or not: the service runs exactly that or refuses.
        ran = await self._auditor.attempt(call, lambda: tool.handler(bound, caller, approval.expected))
        if isinstance(ran, Failed):
            return _refused(ran.message, Outcome.ERROR)
        if ran.audit_note:  # before a question goes back: its parked record keeps the note too
            call.approval = replace(approval, summary=f"{approval.summary}: {ran.audit_note}")
        if ran.question is not None:
            return ran.question
        outcome = Outcome.TIMEOUT if ran.timed_out else Outcome.OK if ran.ok else Outcome.ERROR
        return Ended(ran, outcome, ran.message, recorded=ran.recorded)


def _refused(message: str, outcome: Outcome) -> Ended[ManagementResult]:
    return Ended(ManagementResult(ok=False, message=message), outcome, message)
