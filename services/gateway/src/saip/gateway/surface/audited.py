"""The audited-call core both gates share (the management gate and the published tools' gate).

A call is one `Call` from its arrival to its answer: who asked for which tool with which arguments, and what the
person decided. `Auditor.run` runs the gate's body and records the call once it ended (never while a question is
out), and records it as abandoned when the client goes away mid-call. A 2026-07-28 question that goes back to its
client is parked with its TIMEOUT record made ready, which one replica publishes if nobody answers
(`surface.questions`). `Auditor.record` is the one place an audit record is built, published and timed; the kind of
call (`ManagementToolCall`, `PublishedToolCall`) adds its own fields, subject and latency metric.
"""

from __future__ import annotations

import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

import anyio
from google.protobuf.timestamp_pb2 import Timestamp

from saip.common import names, tracing
from saip.common.approval_sentences import ABANDONED, CUT, UNEXPECTED
from saip.common.masking import Masker
from saip.gateway.credentials.usage import Usage
from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import Asked, Decided, Decision
from saip.gateway.surface.management import Approval, Caller, Level, Outcome
from saip.gateway.surface.pending import NoQuestions, QuestionStore
from saip.v1 import common_pb2, events_pb2, gateway_pb2

logger = logging.getLogger(__name__)

RESULT_LIMIT = 2000  # characters of the (masked) result a record keeps

R = TypeVar("R")
T = TypeVar("T")

_SPANS = tracing.tracer("gateway")


class AuditSink(Protocol):
    async def publish(self, subject: str, record: events_pb2.AuditRecord, record_id: str) -> str | None:
        """Store the record; returns a warning when it could not be stored durably."""
        ...


@dataclass
class Call(ABC):
    """One call through a gate."""

    tool: str
    caller: Caller
    arguments: dict[str, Any] | None
    started: float = field(default_factory=time.time)
    decision: Decided | None = None
    asked_at: float | None = None  # set while a question is out
    unanswered: str = ""  # what the record says if the question's wait ends unanswered

    def asking(self, unanswered: str) -> None:
        self.asked_at, self.unanswered = time.time(), unanswered

    @abstractmethod
    def audit_record(self, common: dict[str, Any], masker: Masker) -> tuple[str, events_pb2.AuditRecord]:
        """The subject and the record of this kind of call, from the fields every record has."""

    @abstractmethod
    def observe(self, metrics: GatewayMetrics, outcome: Outcome, seconds: float) -> None:
        """Time the call on this kind's latency metric."""

    def traced_source(self) -> str:
        """Where the tool comes from, as its trace names it: `management`, or a published tool's source."""
        return "management"


@dataclass
class ManagementToolCall(Call):
    category: str = ""
    level: Level = Level.READ  # the tool's own level, until its approval plan is made
    approval: Approval | None = None

    def audit_record(self, common: dict[str, Any], masker: Masker) -> tuple[str, events_pb2.AuditRecord]:
        approval = self.planned
        record = events_pb2.ManagementCall(
            **common,
            category=self.category,
            level=approval.level.proto,
            summary=masker.text(approval.summary),
            high_risk=approval.high_risk,
        )
        return names.AUDIT_MANAGEMENT, events_pb2.AuditRecord(management=record)

    def observe(self, metrics: GatewayMetrics, outcome: Outcome, seconds: float) -> None:
        metrics.management_call_seconds.labels(self.planned.level.value, outcome.value).observe(seconds)

    @property
    def planned(self) -> Approval:
        return self.approval or Approval(self.level, "")


@dataclass
class PublishedToolCall(Call):
    source: str = ""
    proxied: events_pb2.ProxiedCall | None = None  # an exposed upstream tool: its server and upstream name

    def audit_record(self, common: dict[str, Any], masker: Masker) -> tuple[str, events_pb2.AuditRecord]:
        side = common_pb2.HITL_SIDE_UNSPECIFIED
        if self.decision:
            side = common_pb2.HITL_SIDE_CHAT if self.caller.chat else common_pb2.HITL_SIDE_SERVER
        record = events_pb2.ToolCall(**common, source=self.source, side=side, proxied=self.proxied)
        return names.AUDIT_TOOL, events_pb2.AuditRecord(tool_call=record)

    def observe(self, metrics: GatewayMetrics, outcome: Outcome, seconds: float) -> None:
        metrics.tool_call_seconds.labels(self.source or "unknown", outcome.value).observe(seconds)

    def traced_source(self) -> str:
        return self.source or "unknown"


@dataclass(frozen=True)
class Ended(Generic[R]):
    """A call that finished (it ran, failed or was refused): the gate's answer, how it ended, the text the record
    keeps, and a warning when the record could not be stored durably."""

    answer: R
    outcome: Outcome
    said: str
    warning: str | None = None
    recorded: bool = False  # on the trail already (a sweeper recorded the call as TIMEOUT): nothing more to record


@dataclass(frozen=True)
class Failed:
    """The owning service's side of a call did not give an answer; `message` tells the AI why."""

    message: str


class Auditor:
    def __init__(
        self,
        *,
        sink: AuditSink,
        replica: str,
        metrics: GatewayMetrics,
        masker: Callable[[], Masker] = Masker,
        questions: QuestionStore | None = None,
        usage: Usage | None = None,
    ) -> None:
        """`usage` counts each recorded call for its credential (the person's list of clients)."""
        self._sink = sink
        self._replica = replica
        self._metrics = metrics
        self._masker = masker
        self._questions = questions if questions is not None else NoQuestions()
        self._usage = usage

    async def run(self, call: Call, body: Callable[[], Awaitable[Ended[R] | Asked]]) -> Ended[R] | Asked:
        """The gate's body, then the call's record; a question that goes back to the client is not recorded yet."""
        with _SPANS.span("gate call", attributes={"saip.tool": call.tool, "saip.source": call.traced_source()}) as span:
            ended = await self._ran(call, body)
            if not isinstance(ended, Asked):  # a question handed back to the client: the retry's trace ends it
                span.set_attribute("saip.outcome", ended.outcome.value)
            return ended

    async def _ran(self, call: Call, body: Callable[[], Awaitable[Ended[R] | Asked]]) -> Ended[R] | Asked:
        try:
            ended = await body()
        except anyio.get_cancelled_exc_class():
            said, outcome = self._cut(call)
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.record(call, said, outcome)
            raise
        if isinstance(ended, Asked):
            if not ended.again:
                await self._park(call, ended)
            return ended
        if ended.recorded or (call.decision is not None and call.decision.recorded):
            return ended  # a sweeper recorded this call (or its question) as TIMEOUT already
        # A call that ended is recorded even when its caller's time runs out meanwhile (a chat turn's deadline).
        with anyio.CancelScope(shield=True):
            warning = await self.record(call, ended.said, ended.outcome)
        return replace(ended, warning=warning)

    def _cut(self, call: Call) -> tuple[str, Outcome]:
        """What the record of a call cancelled midway says: the end of its chat turn came (a TIMEOUT, the question's
        own sentence if one was out), or the client went away (nobody decided a question that was out)."""
        out = call.asked_at is not None and call.decision is None
        waited = time.time() - call.asked_at if call.asked_at is not None else 0.0
        if call.caller.deadline is not None and call.caller.deadline.reached:
            if out:
                call.decision = Decided(Decision.TIMEOUT, waited)
                return call.unanswered, Outcome.TIMEOUT
            return CUT.format(tool=call.tool), Outcome.TIMEOUT
        if out:
            call.decision = Decided(Decision.ELICIT_FAILED, waited, "the client went away")
        return ABANDONED.format(tool=call.tool), Outcome.ERROR

    async def _park(self, call: Call, asked: Asked) -> None:
        """Keep the question where every replica sees it, with the record it leaves if nobody answers."""
        decided = call.decision
        if not asked.relayed:  # nobody answered saip's own question: that is the decision its record keeps
            call.decision = Decided(Decision.TIMEOUT, asked.deadline - asked.asked_at)
        subject, record = self._built(call, asked.expired, Outcome.TIMEOUT, ended=asked.deadline)
        call.decision = decided
        question = gateway_pb2.PendingQuestion(
            tool=call.tool,
            deadline=asked.deadline,
            asked_at=asked.asked_at,
            subject=subject,
            record=record.SerializeToString(),
            record_id=_record_id(record),
            gateway=self._replica,
            out_of_band=asked.out_of_band,
            message=asked.message,
            client=asked.client,
            level=asked.level,
        )
        if asked.binding is not None:
            question.arguments_hash = asked.binding.arguments_hash
            question.revisions.update(asked.binding.revisions())
        try:
            await self._questions.park(asked.nonce, question)
        except Exception as exc:  # the answer still records the call; only an unanswered one would go unrecorded
            logger.warning("a question could not be parked", extra={"tool": call.tool, "error": repr(exc)})

    async def attempt(self, call: Call, run: Callable[[], Awaitable[T]]) -> T | Failed:
        """Run the owning service's side of the call. A refusal or an outage is the service's own sentence; anything
        else is logged and answered with its masked message, never taking the gateway down."""
        try:
            with _SPANS.span("gate run", attributes={"saip.tool": call.tool}):
                return await run()
        except (ServiceRefused, ServiceUnavailable) as exc:
            return Failed(str(exc))
        except Exception as exc:  # the outermost edge of one call
            logger.exception("tool call failed", extra={"tool": call.tool})
            return Failed(UNEXPECTED.format(message=self._masker().text(str(exc)) or type(exc).__name__))

    async def record(self, call: Call, said: str, outcome: Outcome) -> str | None:
        """Build the call's audit record (masked), publish it, and time the call."""
        subject, record = self._built(call, said, outcome)
        call.observe(self._metrics, outcome, time.time() - call.started)
        if self._usage is not None:
            asked = call.decision is not None and call.decision.decision is not Decision.DENIED
            self._usage.called(call.caller.credential, asked)
        return await self._sink.publish(subject, record, _record_id(record))

    def _built(
        self, call: Call, said: str, outcome: Outcome, *, ended: float | None = None
    ) -> tuple[str, events_pb2.AuditRecord]:
        """The call's audit record (masked) and its subject, as if it ended at `ended` (now when None)."""
        masker = self._masker()
        duration = (ended if ended is not None else time.time()) - call.started
        stamp = Timestamp()
        stamp.FromNanoseconds(int(call.started * 1e9))
        decision = call.decision
        common: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "time": stamp,
            "gateway": self._replica,
            "caller": call.caller.proto,
            "tool": call.tool,
            "outcome": outcome.proto,
            "duration_ms": int(duration * 1000),
            "arguments": masker.json(call.arguments or {}),
            "result": masker.text(said)[:RESULT_LIMIT],
            "hitl": decision.decision.proto if decision else common_pb2.HITL_DECISION_UNSPECIFIED,
            "approval_seconds": decision.waited if decision else 0.0,
            "answered_via": decision.via if decision else "",
            "trace_id": _trace_id(),
        }
        return call.audit_record(common, masker)


def _trace_id() -> str:
    """The trace the record is made in, when it is kept (sampled): what a call opened on the Safety screen links to."""
    context = tracing.current().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid and context.trace_flags.sampled else ""


def _record_id(record: events_pb2.AuditRecord) -> str:
    kind = record.WhichOneof("record")
    return str(getattr(record, kind).id) if kind else ""
