import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from saip.v1 import common_pb2 as _common_pb2
from saip.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChainedRecord(_message.Message):
    __slots__ = ("index", "seq", "record")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    index: int
    seq: int
    record: _events_pb2.AuditRecord
    def __init__(self, index: _Optional[int] = ..., seq: _Optional[int] = ..., record: _Optional[_Union[_events_pb2.AuditRecord, _Mapping]] = ...) -> None: ...

class GetOverviewRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OutcomeCount(_message.Message):
    __slots__ = ("outcome", "count")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.Outcome
    count: int
    def __init__(self, outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., count: _Optional[int] = ...) -> None: ...

class TypeCount(_message.Message):
    __slots__ = ("type", "count")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    type: str
    count: int
    def __init__(self, type: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GetOverviewResponse(_message.Message):
    __slots__ = ("window", "management_outcomes", "risk_events", "chain_length", "head_hash", "last_entry_time", "pending", "collector_since", "capacity")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    MANAGEMENT_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    RISK_EVENTS_FIELD_NUMBER: _ClassVar[int]
    CHAIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    HEAD_HASH_FIELD_NUMBER: _ClassVar[int]
    LAST_ENTRY_TIME_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    COLLECTOR_SINCE_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    window: int
    management_outcomes: _containers.RepeatedCompositeFieldContainer[OutcomeCount]
    risk_events: _containers.RepeatedCompositeFieldContainer[TypeCount]
    chain_length: int
    head_hash: str
    last_entry_time: _timestamp_pb2.Timestamp
    pending: int
    collector_since: _timestamp_pb2.Timestamp
    capacity: int
    def __init__(self, window: _Optional[int] = ..., management_outcomes: _Optional[_Iterable[_Union[OutcomeCount, _Mapping]]] = ..., risk_events: _Optional[_Iterable[_Union[TypeCount, _Mapping]]] = ..., chain_length: _Optional[int] = ..., head_hash: _Optional[str] = ..., last_entry_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pending: _Optional[int] = ..., collector_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., capacity: _Optional[int] = ...) -> None: ...

class CallFilter(_message.Message):
    __slots__ = ("tool", "client", "level", "outcome", "since", "until", "operator", "interface")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    INTERFACE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    client: str
    level: _common_pb2.ApprovalLevel
    outcome: _common_pb2.Outcome
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    operator: str
    interface: str
    def __init__(self, tool: _Optional[str] = ..., client: _Optional[str] = ..., level: _Optional[_Union[_common_pb2.ApprovalLevel, str]] = ..., outcome: _Optional[_Union[_common_pb2.Outcome, str]] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., operator: _Optional[str] = ..., interface: _Optional[str] = ...) -> None: ...

class ListManagementCallsRequest(_message.Message):
    __slots__ = ("limit", "before_seq", "filter")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    limit: int
    before_seq: int
    filter: CallFilter
    def __init__(self, limit: _Optional[int] = ..., before_seq: _Optional[int] = ..., filter: _Optional[_Union[CallFilter, _Mapping]] = ...) -> None: ...

class GetEntryRequest(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...

class ListManagementCallsResponse(_message.Message):
    __slots__ = ("entries", "next_before_seq")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ChainedRecord]
    next_before_seq: int
    def __init__(self, entries: _Optional[_Iterable[_Union[ChainedRecord, _Mapping]]] = ..., next_before_seq: _Optional[int] = ...) -> None: ...

class ListToolCallsRequest(_message.Message):
    __slots__ = ("limit", "before_seq", "tool", "source")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    limit: int
    before_seq: int
    tool: str
    source: str
    def __init__(self, limit: _Optional[int] = ..., before_seq: _Optional[int] = ..., tool: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class ListToolCallsResponse(_message.Message):
    __slots__ = ("entries", "next_before_seq")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ChainedRecord]
    next_before_seq: int
    def __init__(self, entries: _Optional[_Iterable[_Union[ChainedRecord, _Mapping]]] = ..., next_before_seq: _Optional[int] = ...) -> None: ...

class ListRiskEventsRequest(_message.Message):
    __slots__ = ("limit", "before_seq", "type")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    limit: int
    before_seq: int
    type: str
    def __init__(self, limit: _Optional[int] = ..., before_seq: _Optional[int] = ..., type: _Optional[str] = ...) -> None: ...

class RiskEventEntry(_message.Message):
    __slots__ = ("index", "seq", "event")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    index: int
    seq: int
    event: _events_pb2.RiskEvent
    def __init__(self, index: _Optional[int] = ..., seq: _Optional[int] = ..., event: _Optional[_Union[_events_pb2.RiskEvent, _Mapping]] = ...) -> None: ...

class ListRiskEventsResponse(_message.Message):
    __slots__ = ("entries", "next_before_seq")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_BEFORE_SEQ_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[RiskEventEntry]
    next_before_seq: int
    def __init__(self, entries: _Optional[_Iterable[_Union[RiskEventEntry, _Mapping]]] = ..., next_before_seq: _Optional[int] = ...) -> None: ...

class GetHitlSummaryRequest(_message.Message):
    __slots__ = ("recent",)
    RECENT_FIELD_NUMBER: _ClassVar[int]
    recent: int
    def __init__(self, recent: _Optional[int] = ...) -> None: ...

class HitlCount(_message.Message):
    __slots__ = ("side", "decision", "count")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    side: _common_pb2.HitlSide
    decision: _common_pb2.HitlDecision
    count: int
    def __init__(self, side: _Optional[_Union[_common_pb2.HitlSide, str]] = ..., decision: _Optional[_Union[_common_pb2.HitlDecision, str]] = ..., count: _Optional[int] = ...) -> None: ...

class GetHitlSummaryResponse(_message.Message):
    __slots__ = ("counts", "approval_rate", "questions", "recent", "collector_since", "answer_times")
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_RATE_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    RECENT_FIELD_NUMBER: _ClassVar[int]
    COLLECTOR_SINCE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TIMES_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedCompositeFieldContainer[HitlCount]
    approval_rate: float
    questions: int
    recent: _containers.RepeatedCompositeFieldContainer[ChainedRecord]
    collector_since: _timestamp_pb2.Timestamp
    answer_times: AnswerTimes
    def __init__(self, counts: _Optional[_Iterable[_Union[HitlCount, _Mapping]]] = ..., approval_rate: _Optional[float] = ..., questions: _Optional[int] = ..., recent: _Optional[_Iterable[_Union[ChainedRecord, _Mapping]]] = ..., collector_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., answer_times: _Optional[_Union[AnswerTimes, _Mapping]] = ...) -> None: ...

class AnswerTimes(_message.Message):
    __slots__ = ("answered", "p50_seconds", "p90_seconds", "max_seconds")
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    P50_SECONDS_FIELD_NUMBER: _ClassVar[int]
    P90_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_SECONDS_FIELD_NUMBER: _ClassVar[int]
    answered: int
    p50_seconds: float
    p90_seconds: float
    max_seconds: float
    def __init__(self, answered: _Optional[int] = ..., p50_seconds: _Optional[float] = ..., p90_seconds: _Optional[float] = ..., max_seconds: _Optional[float] = ...) -> None: ...

class VerifyChainRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BrokenLink(_message.Message):
    __slots__ = ("index", "seq", "reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    seq: int
    reason: str
    def __init__(self, index: _Optional[int] = ..., seq: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class VerifyChainResponse(_message.Message):
    __slots__ = ("ok", "checked", "first_index", "last_index", "broken")
    OK_FIELD_NUMBER: _ClassVar[int]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    FIRST_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_INDEX_FIELD_NUMBER: _ClassVar[int]
    BROKEN_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    checked: int
    first_index: int
    last_index: int
    broken: BrokenLink
    def __init__(self, ok: _Optional[bool] = ..., checked: _Optional[int] = ..., first_index: _Optional[int] = ..., last_index: _Optional[int] = ..., broken: _Optional[_Union[BrokenLink, _Mapping]] = ...) -> None: ...

class TailEntriesRequest(_message.Message):
    __slots__ = ("backlog",)
    BACKLOG_FIELD_NUMBER: _ClassVar[int]
    backlog: int
    def __init__(self, backlog: _Optional[int] = ...) -> None: ...

class ListTracesRequest(_message.Message):
    __slots__ = ("limit", "tool", "outcome", "min_duration_ms")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    MIN_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    limit: int
    tool: str
    outcome: str
    min_duration_ms: float
    def __init__(self, limit: _Optional[int] = ..., tool: _Optional[str] = ..., outcome: _Optional[str] = ..., min_duration_ms: _Optional[float] = ...) -> None: ...

class TraceSummary(_message.Message):
    __slots__ = ("trace_id", "name", "tool", "outcome", "start_time", "duration_ms", "span_count", "services", "error", "complete")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    SPAN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    name: str
    tool: str
    outcome: str
    start_time: _timestamp_pb2.Timestamp
    duration_ms: float
    span_count: int
    services: _containers.RepeatedScalarFieldContainer[str]
    error: bool
    complete: bool
    def __init__(self, trace_id: _Optional[str] = ..., name: _Optional[str] = ..., tool: _Optional[str] = ..., outcome: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., duration_ms: _Optional[float] = ..., span_count: _Optional[int] = ..., services: _Optional[_Iterable[str]] = ..., error: _Optional[bool] = ..., complete: _Optional[bool] = ...) -> None: ...

class ListTracesResponse(_message.Message):
    __slots__ = ("traces", "kept", "capacity", "max_age_minutes")
    TRACES_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MINUTES_FIELD_NUMBER: _ClassVar[int]
    traces: _containers.RepeatedCompositeFieldContainer[TraceSummary]
    kept: int
    capacity: int
    max_age_minutes: float
    def __init__(self, traces: _Optional[_Iterable[_Union[TraceSummary, _Mapping]]] = ..., kept: _Optional[int] = ..., capacity: _Optional[int] = ..., max_age_minutes: _Optional[float] = ...) -> None: ...

class GetTraceRequest(_message.Message):
    __slots__ = ("trace_id",)
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    def __init__(self, trace_id: _Optional[str] = ...) -> None: ...

class TraceSpan(_message.Message):
    __slots__ = ("span_id", "parent_span_id", "name", "service", "kind", "start_offset_ms", "duration_ms", "error", "status_message", "attributes", "depth")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_MS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    span_id: str
    parent_span_id: str
    name: str
    service: str
    kind: str
    start_offset_ms: float
    duration_ms: float
    error: bool
    status_message: str
    attributes: _containers.ScalarMap[str, str]
    depth: int
    def __init__(self, span_id: _Optional[str] = ..., parent_span_id: _Optional[str] = ..., name: _Optional[str] = ..., service: _Optional[str] = ..., kind: _Optional[str] = ..., start_offset_ms: _Optional[float] = ..., duration_ms: _Optional[float] = ..., error: _Optional[bool] = ..., status_message: _Optional[str] = ..., attributes: _Optional[_Mapping[str, str]] = ..., depth: _Optional[int] = ...) -> None: ...

class GetTraceResponse(_message.Message):
    __slots__ = ("trace", "spans", "dropped_spans")
    TRACE_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_SPANS_FIELD_NUMBER: _ClassVar[int]
    trace: TraceSummary
    spans: _containers.RepeatedCompositeFieldContainer[TraceSpan]
    dropped_spans: int
    def __init__(self, trace: _Optional[_Union[TraceSummary, _Mapping]] = ..., spans: _Optional[_Iterable[_Union[TraceSpan, _Mapping]]] = ..., dropped_spans: _Optional[int] = ...) -> None: ...
