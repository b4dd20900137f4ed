"""The words every saip service writes the same way: a counted noun ("1 tool", "3 tools"), a moment (RFC 3339), the
words of the shared protobuf enums, and the management tools' reserved prefix.

Levels and outcomes are upper case where the AI reads them (`[DESTRUCTIVE]`, `OK`) and lower case as metric labels;
decisions, sides and severities are lower case everywhere. The sentences of approvals are
`saip.common.approval_sentences`'; a person's command for a management tool is the command line's
(`saip.cli.hints`).
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

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


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, or `many` (the noun plus "s" when not given) for any count but one."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def when(stamp: Timestamp) -> str | None:
    """A moment as the AI and the person read it in JSON: RFC 3339, or None for a timestamp never set."""
    return stamp.ToJsonString() if stamp.seconds or stamp.nanos else None


def is_reserved(name: str) -> bool:
    """Whether a chosen name takes the management tools' prefix, in any case (`SAIP_x` reads as one all the same)."""
    return name.casefold().startswith(RESERVED_PREFIX)
