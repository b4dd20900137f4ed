"""The words for the shared protobuf enums, one table each: what the AI, the JSON views, logs and metric labels read.

Levels and outcomes are upper case where the AI reads them (`[DESTRUCTIVE]`, `OK`) and lower case as metric labels;
decisions, sides and severities are lower case everywhere.
"""

from __future__ import annotations

from saip.v1 import common_pb2

LEVELS: dict[common_pb2.ApprovalLevel, str] = {
    common_pb2.APPROVAL_LEVEL_READ: "READ",
    common_pb2.APPROVAL_LEVEL_WRITE: "WRITE",
    common_pb2.APPROVAL_LEVEL_DESTRUCTIVE: "DESTRUCTIVE",
}
OUTCOMES: dict[common_pb2.Outcome, str] = {
    common_pb2.OUTCOME_OK: "OK",
    common_pb2.OUTCOME_ERROR: "ERROR",
    common_pb2.OUTCOME_REFUSED: "REFUSED",
    common_pb2.OUTCOME_DECLINED: "DECLINED",
    common_pb2.OUTCOME_DENIED: "DENIED",
    common_pb2.OUTCOME_TIMEOUT: "TIMEOUT",
}
DECISIONS: dict[common_pb2.HitlDecision, str] = {
    common_pb2.HITL_DECISION_APPROVED: "approved",
    common_pb2.HITL_DECISION_DECLINED: "declined",
    common_pb2.HITL_DECISION_TIMEOUT: "timeout",
    common_pb2.HITL_DECISION_ELICIT_FAILED: "elicit-failed",
    common_pb2.HITL_DECISION_DENIED: "denied",
}
SIDES: dict[common_pb2.HitlSide, str] = {
    common_pb2.HITL_SIDE_SERVER: "server",
    common_pb2.HITL_SIDE_CHAT: "chat",
}
SEVERITIES: dict[common_pb2.Severity, str] = {
    common_pb2.SEVERITY_INFO: "info",
    common_pb2.SEVERITY_WARN: "warn",
}
UNSPECIFIED = "unspecified"

# The names of the management tools (saip_<area>_<verb>); no published tool, alias or knowledge tool may take it.
RESERVED_PREFIX = "saip_"


def is_reserved(name: str) -> bool:
    """Whether a chosen name takes the management tools' prefix, in any case (`SAIP_x` reads as one all the same)."""
    return name.casefold().startswith(RESERVED_PREFIX)


def changed_since_asked(what: str, asked: object, now: object) -> str:
    """The refusal of a change whose approval described another state of what it changes: the gateway and every
    service say it in the same words (approvals bind what they describe, docs/architecture.md)."""
    return f"{what} changed since the question was asked (revision {asked}, now {now}); read it again and ask again"
