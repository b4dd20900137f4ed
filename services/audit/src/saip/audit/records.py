"""What one audit record means: its kind, its masked copy, its log line, the risk event a management call
implies, and the counter increments it stands for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from google.protobuf.message import DecodeError

from saip.audit.errors import RecordRejected
from saip.common import callers, names, words
from saip.common.masking import Masker
from saip.v1 import common_pb2, events_pb2

Kind = Literal["management", "tool", "risk"]
KINDS: tuple[Kind, ...] = ("management", "tool", "risk")

# The kind behind each field of AuditRecord's oneof, and the subject publishers use for each kind.
_KIND_OF_FIELD: dict[str, Kind] = {"management": "management", "tool_call": "tool", "risk": "risk"}
SUBJECT_OF_KIND: dict[Kind, str] = {
    "management": names.AUDIT_MANAGEMENT,
    "tool": names.AUDIT_TOOL,
    "risk": names.AUDIT_RISK,
}

MANAGEMENT_RISK_TYPE = "MANAGEMENT"
SANDBOX_GUARD_BLOCKED = "sandbox-guard-blocked"
POISONING_HIT = "poisoning-hit"
HASH_LEDGER_MISMATCH = "hash-ledger-mismatch"
# The risk types the services raise; others are accepted and counted under their own name.
KNOWN_RISK_TYPES = (
    "server-risk-computed",
    "tool-publish-risk-computed",
    "floor-override-triggered",
    HASH_LEDGER_MISMATCH,
    "composition-lifecycle",
    POISONING_HIT,
    SANDBOX_GUARD_BLOCKED,
    MANAGEMENT_RISK_TYPE,
)

# Metric labels: the shared words, outcomes lower-cased.
OUTCOME_LABELS: dict[common_pb2.Outcome, str] = {value: word.lower() for value, word in words.OUTCOMES.items()}
HITL_DECISION_LABELS = words.DECISIONS
HITL_SIDE_LABELS = words.SIDES
SEVERITY_LABELS = words.SEVERITIES
UNSPECIFIED = words.UNSPECIFIED
UNNAMED = "unknown"  # a client that gave no name
REJECT_REASONS = ("undecodable", "empty", "missing-id")  # why a message on a record subject is not chained


def kind_of(record: events_pb2.AuditRecord) -> Kind | None:
    which = record.WhichOneof("record")
    return _KIND_OF_FIELD[which] if which else None


def record_id(record: events_pb2.AuditRecord) -> str:
    which = record.WhichOneof("record")
    return str(getattr(record, which).id) if which else ""


def record_seconds(record: events_pb2.AuditRecord) -> float | None:
    """When the call or event happened, in seconds since the epoch by its publisher's clock; None when the publisher
    left it unset."""
    which = record.WhichOneof("record")
    if not which:
        return None
    stamp = getattr(record, which).time
    if stamp.seconds == 0 and stamp.nanos == 0:
        return None
    return float(stamp.seconds + stamp.nanos / 1e9)


def wrap(message: events_pb2.ManagementCall | events_pb2.ToolCall | events_pb2.RiskEvent) -> events_pb2.AuditRecord:
    """The AuditRecord that carries one call or event (what a publisher puts on the record subject)."""
    if isinstance(message, events_pb2.ManagementCall):
        return events_pb2.AuditRecord(management=message)
    if isinstance(message, events_pb2.ToolCall):
        return events_pb2.AuditRecord(tool_call=message)
    return events_pb2.AuditRecord(risk=message)


def subject_of(record: events_pb2.AuditRecord) -> str:
    kind = kind_of(record)
    if kind is None:
        raise ValueError("an empty AuditRecord has no subject")
    return SUBJECT_OF_KIND[kind]


def parse(data: bytes) -> events_pb2.AuditRecord:
    """The record in a message published on a record subject.

    Raises:
        RecordRejected: the bytes are not an AuditRecord, carry none of its kinds, or the record has no id
            (the id is what keeps a redelivered record from being chained twice).
    """
    record = events_pb2.AuditRecord()
    try:
        record.ParseFromString(data)
    except DecodeError as exc:
        raise RecordRejected("undecodable", str(exc)) from None
    if kind_of(record) is None:
        raise RecordRejected("empty", "the AuditRecord carries no management call, tool call or risk event")
    if not record_id(record):
        raise RecordRejected("missing-id", "the record has no id")
    return record


def mask(record: events_pb2.AuditRecord, masker: Masker) -> events_pb2.AuditRecord:
    """A copy with every free-text field masked again (publishers mask too; this is the second line)."""
    masked = events_pb2.AuditRecord()
    masked.CopyFrom(record)
    which = masked.WhichOneof("record")
    if which == "management":
        call = masked.management
        call.summary = masker.text(call.summary)
        call.arguments = masker.text(call.arguments)
        call.result = masker.text(call.result)
    elif which == "tool_call":
        masked.tool_call.arguments = masker.text(masked.tool_call.arguments)
        masked.tool_call.result = masker.text(masked.tool_call.result)
    elif which == "risk":
        masked.risk.summary = masker.text(masked.risk.summary)
    return masked


def client_label(caller: common_pb2.Caller) -> str:
    """The caller as a log line and a risk event's summary name it: its credential first, then the client's own name
    and version (a call that presented no credential: the client alone, the reference format)."""
    return callers.label(caller, UNNAMED)


def level_name(level: common_pb2.ApprovalLevel) -> str:
    return common_pb2.ApprovalLevel.Name(level).removeprefix("APPROVAL_LEVEL_")


def outcome_name(outcome: common_pb2.Outcome) -> str:
    return common_pb2.Outcome.Name(outcome).removeprefix("OUTCOME_")


def outcome_label(outcome: common_pb2.Outcome) -> str:
    return OUTCOME_LABELS.get(outcome, UNSPECIFIED)


def severity_label(severity: common_pb2.Severity) -> str:
    return SEVERITY_LABELS.get(severity, UNSPECIFIED)


def is_successful_read(call: events_pb2.ManagementCall) -> bool:
    return call.level == common_pb2.APPROVAL_LEVEL_READ and call.outcome == common_pb2.OUTCOME_OK


def management_risk_event(call: events_pb2.ManagementCall) -> events_pb2.RiskEvent | None:
    """The MANAGEMENT risk event of a call that was not a successful read; warn for destructive or failed calls."""
    if is_successful_read(call):
        return None
    failed = call.outcome != common_pb2.OUTCOME_OK
    destructive = call.level == common_pb2.APPROVAL_LEVEL_DESTRUCTIVE
    who = "the person" if call.caller.operator == names.PERSON else client_label(call.caller)
    summary = f"{who} ran {call.tool} ({level_name(call.level)}): {outcome_name(call.outcome)}"
    if call.summary:
        summary += f" — {call.summary}"
    event = events_pb2.RiskEvent(
        id=f"{call.id}:management",
        service="gateway",
        type=MANAGEMENT_RISK_TYPE,
        severity=common_pb2.SEVERITY_WARN if failed or destructive else common_pb2.SEVERITY_INFO,
        summary=summary,
        reason=outcome_label(call.outcome),
        subject=call.tool,
    )
    event.time.CopyFrom(call.time)
    return event


def risk_event_of(record: events_pb2.AuditRecord) -> events_pb2.RiskEvent | None:
    """The risk event a record stands for: the event itself, or the one a management call implies."""
    which = record.WhichOneof("record")
    if which == "risk":
        return record.risk
    if which == "management":
        return management_risk_event(record.management)
    return None


def hitl_side(record: events_pb2.AuditRecord) -> common_pb2.HitlSide:
    """Which gate asked: a tool call says so (a chat turn's approvals are the chat side); the management gate,
    and a tool call that does not say, are the server side.
    """
    if record.WhichOneof("record") == "tool_call" and record.tool_call.side == common_pb2.HITL_SIDE_CHAT:
        return common_pb2.HITL_SIDE_CHAT
    return common_pb2.HITL_SIDE_SERVER


def hitl_decision(record: events_pb2.AuditRecord) -> common_pb2.HitlDecision:
    which = record.WhichOneof("record")
    if which == "management":
        return record.management.hitl
    if which == "tool_call":
        return record.tool_call.hitl
    return common_pb2.HITL_DECISION_UNSPECIFIED


def needed_decision(record: events_pb2.AuditRecord) -> bool:
    return hitl_decision(record) != common_pb2.HITL_DECISION_UNSPECIFIED


def approval(counts: Mapping[tuple[str, str], int]) -> tuple[int, float]:
    """(questions, approval rate) from decision counts by (side, decision): every decision is a question that
    was asked (or could not be), and the rate is the approved share of them; 0 when there was none.
    """
    questions = sum(counts.values())
    approved = sum(count for (_, decision), count in counts.items() if decision == "approved")
    return questions, approved / questions if questions else 0.0


@dataclass(frozen=True, slots=True)
class Signals:
    """The counter increments one chained record stands for (metric labels, all bounded vocabularies)."""

    kind: Kind
    management: tuple[str, str] | None = None  # (tool, outcome)
    hitl: tuple[str, str] | None = None  # (side, decision)
    risk_event: tuple[str, str] | None = None  # (type, severity), derived MANAGEMENT events included
    guard_block_reason: str | None = None
    poisoning_hit: bool = False
    tamper_reject: bool = False


def signals(record: events_pb2.AuditRecord) -> Signals:
    kind = kind_of(record)
    if kind is None:
        raise ValueError("an empty AuditRecord stands for nothing")
    management = None
    if kind == "management":
        management = (record.management.tool, outcome_label(record.management.outcome))
    decision = hitl_decision(record)
    hitl = None
    if decision != common_pb2.HITL_DECISION_UNSPECIFIED:
        hitl = (HITL_SIDE_LABELS[hitl_side(record)], HITL_DECISION_LABELS.get(decision, UNSPECIFIED))
    event = risk_event_of(record)
    risk_event = (event.type, severity_label(event.severity)) if event is not None else None
    raised = record.risk.type if kind == "risk" else None
    return Signals(
        kind=kind,
        management=management,
        hitl=hitl,
        risk_event=risk_event,
        guard_block_reason=(record.risk.reason or UNSPECIFIED) if raised == SANDBOX_GUARD_BLOCKED else None,
        poisoning_hit=raised == POISONING_HIT,
        tamper_reject=raised == HASH_LEDGER_MISMATCH,
    )


def log_line(record: events_pb2.AuditRecord) -> str:
    """The application log's line for a chained record (the record is masked already)."""
    which = record.WhichOneof("record")
    if which == "management":
        call = record.management
        # The seed's line; a person's change (client=person) says which of their interfaces it came through.
        through = f" interface={call.caller.interface}" if call.caller.operator == names.PERSON else ""
        return (
            f"mgmt.call client={client_label(call.caller)}{through} tool={call.tool} level={level_name(call.level)} "
            f"outcome={outcome_name(call.outcome)} durationMs={call.duration_ms} summary={call.summary}"
        )
    if which == "tool_call":
        tool = record.tool_call
        hitl = HITL_DECISION_LABELS.get(tool.hitl, "none")
        return (
            f"tool.call client={client_label(tool.caller)} tool={tool.tool} source={tool.source} "
            f"outcome={outcome_name(tool.outcome)} durationMs={tool.duration_ms} hitl={hitl}"
        )
    if which == "risk":
        risk = record.risk
        return (
            f"risk.event type={risk.type} severity={severity_label(risk.severity)} service={risk.service} "
            f"subject={risk.subject} reason={risk.reason} summary={risk.summary}"
        )
    raise ValueError("an empty AuditRecord has no log line")
