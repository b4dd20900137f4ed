import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from saip.v1 import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ManagementCall(_message.Message):
    __slots__ = ("id", "time", "gateway", "caller", "tool", "category", "level", "outcome", "duration_ms", "summary", "arguments", "result", "high_risk", "hitl", "approval_seconds", "answered_via", "trace_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    HIGH_RISK_FIELD_NUMBER: _ClassVar[int]
    HITL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_VIA_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    gateway: str
    caller: _common_pb2.Caller
    tool: str
    category: str
    level: _common_pb2.ApprovalLevel
    outcome: _common_pb2.Outcome
    duration_ms: int
    summary: str
    arguments: str
    result: str
    high_risk: bool
    hitl: _common_pb2.HitlDecision
    approval_seconds: float
    answered_via: str
    trace_id: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., gateway: _Optional[str] = ..., caller: _Optional[_Union[_common_pb2.Caller, _Mapping]] = ..., tool: _Optional[str] = ..., category: _Optional[str] = ..., level: _Optional[_Union[_common_pb2.ApprovalLevel, str]] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., duration_ms: _Optional[int] = ..., summary: _Optional[str] = ..., arguments: _Optional[str] = ..., result: _Optional[str] = ..., high_risk: _Optional[bool] = ..., hitl: _Optional[_Union[_common_pb2.HitlDecision, str]] = ..., approval_seconds: _Optional[float] = ..., answered_via: _Optional[str] = ..., trace_id: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "time", "gateway", "caller", "tool", "source", "outcome", "duration_ms", "arguments", "result", "hitl", "approval_seconds", "side", "answered_via", "proxied", "trace_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    HITL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_VIA_FIELD_NUMBER: _ClassVar[int]
    PROXIED_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    gateway: str
    caller: _common_pb2.Caller
    tool: str
    source: str
    outcome: _common_pb2.Outcome
    duration_ms: int
    arguments: str
    result: str
    hitl: _common_pb2.HitlDecision
    approval_seconds: float
    side: _common_pb2.HitlSide
    answered_via: str
    proxied: ProxiedCall
    trace_id: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., gateway: _Optional[str] = ..., caller: _Optional[_Union[_common_pb2.Caller, _Mapping]] = ..., tool: _Optional[str] = ..., source: _Optional[str] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., duration_ms: _Optional[int] = ..., arguments: _Optional[str] = ..., result: _Optional[str] = ..., hitl: _Optional[_Union[_common_pb2.HitlDecision, str]] = ..., approval_seconds: _Optional[float] = ..., side: _Optional[_Union[_common_pb2.HitlSide, str]] = ..., answered_via: _Optional[str] = ..., proxied: _Optional[_Union[ProxiedCall, _Mapping]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class ProxiedCall(_message.Message):
    __slots__ = ("server", "tool", "alias")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    server: str
    tool: str
    alias: str
    def __init__(self, server: _Optional[str] = ..., tool: _Optional[str] = ..., alias: _Optional[str] = ...) -> None: ...

class RiskEvent(_message.Message):
    __slots__ = ("id", "time", "service", "type", "severity", "summary", "reason", "subject")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    service: str
    type: str
    severity: _common_pb2.Severity
    summary: str
    reason: str
    subject: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., service: _Optional[str] = ..., type: _Optional[str] = ..., severity: _Optional[_Union[_common_pb2.Severity, str]] = ..., summary: _Optional[str] = ..., reason: _Optional[str] = ..., subject: _Optional[str] = ...) -> None: ...

class AuditRecord(_message.Message):
    __slots__ = ("management", "tool_call", "risk")
    MANAGEMENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    management: ManagementCall
    tool_call: ToolCall
    risk: RiskEvent
    def __init__(self, management: _Optional[_Union[ManagementCall, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., risk: _Optional[_Union[RiskEvent, _Mapping]] = ...) -> None: ...

class LedgerEntry(_message.Message):
    __slots__ = ("index", "prev_hash", "hash", "record", "source_id", "chained_at")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    CHAINED_AT_FIELD_NUMBER: _ClassVar[int]
    index: int
    prev_hash: bytes
    hash: bytes
    record: bytes
    source_id: str
    chained_at: _timestamp_pb2.Timestamp
    def __init__(self, index: _Optional[int] = ..., prev_hash: _Optional[bytes] = ..., hash: _Optional[bytes] = ..., record: _Optional[bytes] = ..., source_id: _Optional[str] = ..., chained_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
