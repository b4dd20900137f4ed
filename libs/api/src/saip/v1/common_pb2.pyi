import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovalLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_LEVEL_UNSPECIFIED: _ClassVar[ApprovalLevel]
    APPROVAL_LEVEL_READ: _ClassVar[ApprovalLevel]
    APPROVAL_LEVEL_WRITE: _ClassVar[ApprovalLevel]
    APPROVAL_LEVEL_DESTRUCTIVE: _ClassVar[ApprovalLevel]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_OK: _ClassVar[Outcome]
    OUTCOME_ERROR: _ClassVar[Outcome]
    OUTCOME_REFUSED: _ClassVar[Outcome]
    OUTCOME_DECLINED: _ClassVar[Outcome]
    OUTCOME_DENIED: _ClassVar[Outcome]
    OUTCOME_TIMEOUT: _ClassVar[Outcome]

class HitlDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HITL_DECISION_UNSPECIFIED: _ClassVar[HitlDecision]
    HITL_DECISION_APPROVED: _ClassVar[HitlDecision]
    HITL_DECISION_DECLINED: _ClassVar[HitlDecision]
    HITL_DECISION_TIMEOUT: _ClassVar[HitlDecision]
    HITL_DECISION_ELICIT_FAILED: _ClassVar[HitlDecision]
    HITL_DECISION_DENIED: _ClassVar[HitlDecision]

class HitlSide(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HITL_SIDE_UNSPECIFIED: _ClassVar[HitlSide]
    HITL_SIDE_SERVER: _ClassVar[HitlSide]
    HITL_SIDE_CHAT: _ClassVar[HitlSide]

class Severity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEVERITY_UNSPECIFIED: _ClassVar[Severity]
    SEVERITY_INFO: _ClassVar[Severity]
    SEVERITY_WARN: _ClassVar[Severity]
APPROVAL_LEVEL_UNSPECIFIED: ApprovalLevel
APPROVAL_LEVEL_READ: ApprovalLevel
APPROVAL_LEVEL_WRITE: ApprovalLevel
APPROVAL_LEVEL_DESTRUCTIVE: ApprovalLevel
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_OK: Outcome
OUTCOME_ERROR: Outcome
OUTCOME_REFUSED: Outcome
OUTCOME_DECLINED: Outcome
OUTCOME_DENIED: Outcome
OUTCOME_TIMEOUT: Outcome
HITL_DECISION_UNSPECIFIED: HitlDecision
HITL_DECISION_APPROVED: HitlDecision
HITL_DECISION_DECLINED: HitlDecision
HITL_DECISION_TIMEOUT: HitlDecision
HITL_DECISION_ELICIT_FAILED: HitlDecision
HITL_DECISION_DENIED: HitlDecision
HITL_SIDE_UNSPECIFIED: HitlSide
HITL_SIDE_SERVER: HitlSide
HITL_SIDE_CHAT: HitlSide
SEVERITY_UNSPECIFIED: Severity
SEVERITY_INFO: Severity
SEVERITY_WARN: Severity

class Caller(_message.Message):
    __slots__ = ("client_name", "client_version", "elicitation", "loopback", "protocol_version", "operator", "interface", "credential")
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ELICITATION_FIELD_NUMBER: _ClassVar[int]
    LOOPBACK_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    INTERFACE_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    client_version: str
    elicitation: bool
    loopback: bool
    protocol_version: str
    operator: str
    interface: str
    credential: Credential
    def __init__(self, client_name: _Optional[str] = ..., client_version: _Optional[str] = ..., elicitation: _Optional[bool] = ..., loopback: _Optional[bool] = ..., protocol_version: _Optional[str] = ..., operator: _Optional[str] = ..., interface: _Optional[str] = ..., credential: _Optional[_Union[Credential, _Mapping]] = ...) -> None: ...

class Credential(_message.Message):
    __slots__ = ("id", "kind", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    name: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ServedTool(_message.Message):
    __slots__ = ("name", "title", "description", "input_schema_json", "read_only", "destructive", "idempotent", "open_world", "hitl_required", "hitl_prompt", "risk_level", "source", "upstream_server", "upstream_tool")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_FIELD_NUMBER: _ClassVar[int]
    HITL_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    HITL_PROMPT_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_SERVER_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_TOOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    description: str
    input_schema_json: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    hitl_required: bool
    hitl_prompt: str
    risk_level: int
    source: str
    upstream_server: str
    upstream_tool: str
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., read_only: _Optional[bool] = ..., destructive: _Optional[bool] = ..., idempotent: _Optional[bool] = ..., open_world: _Optional[bool] = ..., hitl_required: _Optional[bool] = ..., hitl_prompt: _Optional[str] = ..., risk_level: _Optional[int] = ..., source: _Optional[str] = ..., upstream_server: _Optional[str] = ..., upstream_tool: _Optional[str] = ...) -> None: ...

class ListServedToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListServedToolsReply(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ServedTool]
    def __init__(self, tools: _Optional[_Iterable[_Union[ServedTool, _Mapping]]] = ...) -> None: ...

class CallServedToolRequest(_message.Message):
    __slots__ = ("name", "arguments_json", "caller", "park_seconds", "park_until")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    PARK_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PARK_UNTIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    caller: Caller
    park_seconds: float
    park_until: float
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., caller: _Optional[_Union[Caller, _Mapping]] = ..., park_seconds: _Optional[float] = ..., park_until: _Optional[float] = ...) -> None: ...

class ServedToolInput(_message.Message):
    __slots__ = ("call", "answer", "resume")
    CALL_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    call: CallServedToolRequest
    answer: ServedAnswer
    resume: ServedResume
    def __init__(self, call: _Optional[_Union[CallServedToolRequest, _Mapping]] = ..., answer: _Optional[_Union[ServedAnswer, _Mapping]] = ..., resume: _Optional[_Union[ServedResume, _Mapping]] = ...) -> None: ...

class ServedResume(_message.Message):
    __slots__ = ("parked_id", "name", "answer", "park_seconds", "park_until")
    PARKED_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    PARK_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PARK_UNTIL_FIELD_NUMBER: _ClassVar[int]
    parked_id: str
    name: str
    answer: ServedAnswer
    park_seconds: float
    park_until: float
    def __init__(self, parked_id: _Optional[str] = ..., name: _Optional[str] = ..., answer: _Optional[_Union[ServedAnswer, _Mapping]] = ..., park_seconds: _Optional[float] = ..., park_until: _Optional[float] = ...) -> None: ...

class ServedToolEvent(_message.Message):
    __slots__ = ("progress", "reply", "question")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    progress: ServedProgress
    reply: CallServedToolReply
    question: ServedQuestion
    def __init__(self, progress: _Optional[_Union[ServedProgress, _Mapping]] = ..., reply: _Optional[_Union[CallServedToolReply, _Mapping]] = ..., question: _Optional[_Union[ServedQuestion, _Mapping]] = ...) -> None: ...

class ServedQuestion(_message.Message):
    __slots__ = ("id", "message", "requested_schema_json", "parked_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    PARKED_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    message: str
    requested_schema_json: str
    parked_id: str
    def __init__(self, id: _Optional[int] = ..., message: _Optional[str] = ..., requested_schema_json: _Optional[str] = ..., parked_id: _Optional[str] = ...) -> None: ...

class ServedAnswer(_message.Message):
    __slots__ = ("id", "action", "content_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_JSON_FIELD_NUMBER: _ClassVar[int]
    id: int
    action: str
    content_json: str
    def __init__(self, id: _Optional[int] = ..., action: _Optional[str] = ..., content_json: _Optional[str] = ...) -> None: ...

class ServedProgress(_message.Message):
    __slots__ = ("progress", "total", "message")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    progress: float
    total: float
    message: str
    def __init__(self, progress: _Optional[float] = ..., total: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

class CallServedToolReply(_message.Message):
    __slots__ = ("is_error", "text", "structured_json")
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_JSON_FIELD_NUMBER: _ClassVar[int]
    is_error: bool
    text: str
    structured_json: str
    def __init__(self, is_error: _Optional[bool] = ..., text: _Optional[str] = ..., structured_json: _Optional[str] = ...) -> None: ...

class ServiceHeartbeat(_message.Message):
    __slots__ = ("service", "replica", "version", "started_at", "at", "cpu_seconds", "rss_bytes", "open_fds", "open_connections", "threads", "restarts")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    CPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    OPEN_FDS_FIELD_NUMBER: _ClassVar[int]
    OPEN_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    service: str
    replica: str
    version: str
    started_at: _timestamp_pb2.Timestamp
    at: _timestamp_pb2.Timestamp
    cpu_seconds: float
    rss_bytes: int
    open_fds: int
    open_connections: int
    threads: int
    restarts: int
    def __init__(self, service: _Optional[str] = ..., replica: _Optional[str] = ..., version: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cpu_seconds: _Optional[float] = ..., rss_bytes: _Optional[int] = ..., open_fds: _Optional[int] = ..., open_connections: _Optional[int] = ..., threads: _Optional[int] = ..., restarts: _Optional[int] = ...) -> None: ...
