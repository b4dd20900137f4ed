"""The approval gate: the one function every management call passes.

caller -> strict arguments -> approval plan (level, summary, high risk) x mode -> maybe a question to the person
-> the contribution's handler -> the result envelope -> one audit record (acknowledged) -> the answer to the AI.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol

import anyio
from google.protobuf.timestamp_pb2 import Timestamp

from saip.common.masking import Masker
from saip.gateway import metrics
from saip.gateway.approval import Approvals, Asked, Binding, Decided, Decision, Interaction, Rejected, StateProblem
from saip.gateway.config import ApprovalMode
from saip.gateway.errors import InvalidArguments, ServiceRefused, ServiceUnavailable
from saip.gateway.management import Approval, Caller, Level, ManagementResult, ManagementTool, Outcome
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

# The sentences the AI receives when a call does not run; each tells it what to do instead.
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
LOOPBACK = "Tool '{tool}' was not run: it is not available to this app's own chat."
HIGH_RISK_UNDER_NONE = (
    "Tool '{tool}' was not run: this is a high-risk action and needs a human decision, but approval is disabled "
    "(management.approval=none). Ask the user to run it from the app."
)
ELICIT_FAILED = "Tool '{tool}' was not run: the approval question could not be asked ({reason}). Do not retry it."
REPLAYED = "Tool '{tool}' was not run: this approval was already used. Call the tool again to ask the user afresh."
MISMATCH = (
    "Tool '{tool}' was not run: the approval answered a different call. Call the tool again to ask the user afresh."
)
ABANDONED = "Tool '{tool}' was not completed: the client went away before the call finished."
UNEXPECTED = "Unexpected error: {message}"


def question(level: Level, caller: Caller, tool: str, summary: str, wait: float) -> str:
    return (
        f"[{level.value}] {caller.label} wants to run {tool}: {summary.rstrip('.')}. "
        f"Answer within {seconds(wait)} s, or the call is refused."
    )


def seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


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
    decided: Decided | None = None
    refusal: str | None = None
    outcome: Outcome = Outcome.OK

    @property
    def approved(self) -> bool:
        return self.asked is None and self.refusal is None


async def consult(
    approvals: Approvals,
    interaction: Interaction,
    caller: Caller,
    tool: str,
    arguments: dict[str, Any] | None,
    text: str,
    asking: Callable[[], None] = lambda: None,
) -> Verdict:
    """Put `text` to the person for this tool and arguments: the one path every gate (management, published tools)
    takes, so the outcomes, their sentences and the HITL meter agree everywhere. `asking` runs as the question goes
    out."""
    if not caller.elicitation:
        return Verdict(decided=Decided(Decision.DENIED), refusal=DENIED.format(tool=tool), outcome=Outcome.DENIED)
    asking()
    asked = await approvals.ask(interaction, Binding.of(tool, arguments), text)
    if isinstance(asked, Asked):
        return Verdict(asked=asked)
    if isinstance(asked, Rejected):
        template = REPLAYED if asked.problem is StateProblem.REPLAYED else MISMATCH
        return Verdict(refusal=template.format(tool=tool), outcome=Outcome.REFUSED)
    metrics.APPROVAL_WAIT.labels(asked.decision.value).observe(asked.waited)
    match asked.decision:
        case Decision.APPROVED:
            return Verdict(decided=asked)
        case Decision.TIMEOUT:
            wait = seconds(approvals.wait_seconds)
            return Verdict(decided=asked, refusal=TIMEOUT.format(tool=tool, wait=wait), outcome=Outcome.TIMEOUT)
        case Decision.ELICIT_FAILED:
            reason = Masker().text(asked.detail) or "the client did not answer"
            return Verdict(decided=asked, refusal=ELICIT_FAILED.format(tool=tool, reason=reason), outcome=Outcome.ERROR)
        case _:
            return Verdict(decided=asked, refusal=DECLINED.format(tool=tool), outcome=Outcome.DECLINED)


class AuditSink(Protocol):
    async def management_call(self, record: events_pb2.ManagementCall) -> str | None:
        """Store the record; returns a warning when it could not be stored durably."""
        ...


@dataclass(frozen=True)
class GateResult:
    """What the MCP layer sends back: a finished call (an envelope, or a published tool's text), or a question."""

    envelope: dict[str, Any] | None = None
    is_error: bool = False
    question: Asked | None = None
    # A published tool's own answer (text and structured content), sent as it is instead of an envelope.
    text: str | None = None
    structured: dict[str, Any] | None = None


@dataclass
class _Call:
    tool: ManagementTool
    caller: Caller
    arguments: dict[str, Any] | None
    started: float
    approval: Approval | None = None
    decision: Decided | None = None
    asked_at: float | None = None  # set while a question is out


class Gate:
    def __init__(
        self,
        *,
        mode: ApprovalMode,
        approvals: Approvals,
        audit: AuditSink,
        replica: str,
        masker: Callable[[], Masker] = Masker,
    ) -> None:
        self.mode = mode
        self.approvals = approvals
        self._audit = audit
        self._replica = replica
        self._masker = masker

    async def execute(
        self, tool: ManagementTool, arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction
    ) -> GateResult:
        call = _Call(tool, caller, arguments, time.time())
        try:
            result, outcome = await self._run(call, interaction)
        except anyio.get_cancelled_exc_class():
            if call.asked_at is not None and call.decision is None:
                # The question was out when the client went away: nobody decided, the asking failed.
                call.decision = Decided(Decision.ELICIT_FAILED, time.time() - call.asked_at, "the client went away")
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._record(call, ManagementResult(False, ABANDONED.format(tool=tool.name)), Outcome.ERROR)
            raise
        if isinstance(result, Asked):
            return GateResult(question=result)
        warning = await self._record(call, result, outcome)
        if warning:
            result.warnings.append(warning)
        return GateResult(envelope=result.envelope(), is_error=not result.ok)

    async def _run(self, call: _Call, interaction: Interaction) -> tuple[ManagementResult | Asked, Outcome]:
        name = call.tool.name
        if call.caller.loopback:
            return _refusal(LOOPBACK.format(tool=name)), Outcome.REFUSED
        try:
            bound = call.tool.bind(call.arguments)
            call.approval = await call.tool.approval_for(bound)
        except InvalidArguments as exc:
            return _refusal(str(exc)), Outcome.REFUSED
        except (ServiceRefused, ServiceUnavailable) as exc:
            # The plan reads the owning service (a tool that does not exist, a service away): nothing was asked.
            return _refusal(str(exc)), Outcome.ERROR
        need = need_for(call.approval, self.mode)
        if need is Need.REFUSE:
            return _refusal(HIGH_RISK_UNDER_NONE.format(tool=name)), Outcome.REFUSED
        if need is Need.ASK:
            stop = await self._ask(call, interaction)
            if stop is not None:
                return stop
        try:
            result = await call.tool.handler(bound, replace(call.caller, progress=interaction.progress))
        except (ServiceRefused, ServiceUnavailable) as exc:
            return _refusal(str(exc)), Outcome.ERROR
        except Exception as exc:
            logger.exception("management tool failed", extra={"tool": name})
            return _refusal(UNEXPECTED.format(message=self._masker().text(str(exc)) or type(exc).__name__)), (
                Outcome.ERROR
            )
        return result, Outcome.OK if result.ok else Outcome.ERROR

    async def _ask(self, call: _Call, interaction: Interaction) -> tuple[ManagementResult | Asked, Outcome] | None:
        """None when the person approved; otherwise what the AI receives instead of a run."""
        assert call.approval is not None
        text = question(
            call.approval.level, call.caller, call.tool.name, call.approval.summary, self.approvals.wait_seconds
        )

        def asking() -> None:
            call.asked_at = time.time()

        verdict = await consult(self.approvals, interaction, call.caller, call.tool.name, call.arguments, text, asking)
        call.decision = verdict.decided
        if verdict.asked is not None:
            return verdict.asked, Outcome.OK
        if verdict.refusal is not None:
            return _refusal(verdict.refusal), verdict.outcome
        return None

    async def _record(self, call: _Call, result: ManagementResult, outcome: Outcome) -> str | None:
        masker = self._masker()
        duration = time.time() - call.started
        approval = call.approval or Approval(call.tool.level, "")
        stamp = Timestamp()
        stamp.FromNanoseconds(int(call.started * 1e9))
        record = events_pb2.ManagementCall(
            id=str(uuid.uuid4()),
            time=stamp,
            gateway=self._replica,
            caller=call.caller.proto,
            tool=call.tool.name,
            category=call.tool.category,
            level=approval.level.proto,
            outcome=outcome.proto,
            duration_ms=int(duration * 1000),
            summary=masker.text(approval.summary),
            arguments=masker.json(call.arguments or {}),
            result=masker.text(result.message)[:2000],
            high_risk=approval.high_risk,
            hitl=call.decision.decision.proto if call.decision else common_pb2.HITL_DECISION_UNSPECIFIED,
            approval_seconds=call.decision.waited if call.decision else 0.0,
        )
        metrics.MANAGEMENT_CALL_SECONDS.labels(approval.level.value, outcome.value).observe(duration)
        return await self._audit.management_call(record)


def _refusal(message: str) -> ManagementResult:
    return ManagementResult(ok=False, message=message)
