import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class McpTokenRecord(_message.Message):
    __slots__ = ("sha256_hex", "created_at", "created_by")
    SHA256_HEX_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    sha256_hex: str
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    def __init__(self, sha256_hex: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ...) -> None: ...

class ApprovalNonce(_message.Message):
    __slots__ = ("tool", "used_at", "gateway")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    USED_AT_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    tool: str
    used_at: _timestamp_pb2.Timestamp
    gateway: str
    def __init__(self, tool: _Optional[str] = ..., used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., gateway: _Optional[str] = ...) -> None: ...

class PendingQuestion(_message.Message):
    __slots__ = ("tool", "deadline", "asked_at", "subject", "record", "record_id", "gateway", "timed_out", "swept_by", "settled", "out_of_band", "held", "message", "client", "answer", "answered_at", "level", "arguments_hash", "revisions", "answered_via", "ended", "ended_at")
    class RevisionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOOL_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ASKED_AT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    RECORD_ID_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    SWEPT_BY_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    OUT_OF_BAND_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_AT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_HASH_FIELD_NUMBER: _ClassVar[int]
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_VIA_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    tool: str
    deadline: float
    asked_at: float
    subject: str
    record: bytes
    record_id: str
    gateway: str
    timed_out: bool
    swept_by: str
    settled: bool
    out_of_band: bool
    held: bool
    message: str
    client: str
    answer: str
    answered_at: float
    level: str
    arguments_hash: str
    revisions: _containers.ScalarMap[str, str]
    answered_via: str
    ended: str
    ended_at: float
    def __init__(self, tool: _Optional[str] = ..., deadline: _Optional[float] = ..., asked_at: _Optional[float] = ..., subject: _Optional[str] = ..., record: _Optional[bytes] = ..., record_id: _Optional[str] = ..., gateway: _Optional[str] = ..., timed_out: _Optional[bool] = ..., swept_by: _Optional[str] = ..., settled: _Optional[bool] = ..., out_of_band: _Optional[bool] = ..., held: _Optional[bool] = ..., message: _Optional[str] = ..., client: _Optional[str] = ..., answer: _Optional[str] = ..., answered_at: _Optional[float] = ..., level: _Optional[str] = ..., arguments_hash: _Optional[str] = ..., revisions: _Optional[_Mapping[str, str]] = ..., answered_via: _Optional[str] = ..., ended: _Optional[str] = ..., ended_at: _Optional[float] = ...) -> None: ...

class ChatConversation(_message.Message):
    __slots__ = ("id", "title", "created_at", "updated_at", "turns", "pending")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    turns: _containers.RepeatedCompositeFieldContainer[ChatTurn]
    pending: ChatPending
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turns: _Optional[_Iterable[_Union[ChatTurn, _Mapping]]] = ..., pending: _Optional[_Union[ChatPending, _Mapping]] = ...) -> None: ...

class ChatTurn(_message.Message):
    __slots__ = ("id", "at", "client", "prompt", "answer", "status", "model", "tokens", "tool_calls", "pipeline", "sources")
    ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    id: str
    at: _timestamp_pb2.Timestamp
    client: str
    prompt: str
    answer: str
    status: str
    model: str
    tokens: int
    tool_calls: _containers.RepeatedCompositeFieldContainer[ChatToolCall]
    pipeline: str
    sources: _containers.RepeatedCompositeFieldContainer[ChatSource]
    def __init__(self, id: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., client: _Optional[str] = ..., prompt: _Optional[str] = ..., answer: _Optional[str] = ..., status: _Optional[str] = ..., model: _Optional[str] = ..., tokens: _Optional[int] = ..., tool_calls: _Optional[_Iterable[_Union[ChatToolCall, _Mapping]]] = ..., pipeline: _Optional[str] = ..., sources: _Optional[_Iterable[_Union[ChatSource, _Mapping]]] = ...) -> None: ...

class ChatSource(_message.Message):
    __slots__ = ("document", "source", "position", "page", "relevance")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    document: str
    source: str
    position: int
    page: int
    relevance: float
    def __init__(self, document: _Optional[str] = ..., source: _Optional[str] = ..., position: _Optional[int] = ..., page: _Optional[int] = ..., relevance: _Optional[float] = ...) -> None: ...

class ChatToolCall(_message.Message):
    __slots__ = ("name", "outcome")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    name: str
    outcome: str
    def __init__(self, name: _Optional[str] = ..., outcome: _Optional[str] = ...) -> None: ...

class ChatPending(_message.Message):
    __slots__ = ("turn_id", "state_json", "asked_at", "pipeline", "sources", "timed_out")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_JSON_FIELD_NUMBER: _ClassVar[int]
    ASKED_AT_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    state_json: str
    asked_at: _timestamp_pb2.Timestamp
    pipeline: str
    sources: _containers.RepeatedCompositeFieldContainer[ChatSource]
    timed_out: ChatTurn
    def __init__(self, turn_id: _Optional[str] = ..., state_json: _Optional[str] = ..., asked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pipeline: _Optional[str] = ..., sources: _Optional[_Iterable[_Union[ChatSource, _Mapping]]] = ..., timed_out: _Optional[_Union[ChatTurn, _Mapping]] = ...) -> None: ...

class CredentialRecord(_message.Message):
    __slots__ = ("id", "kind", "name", "grant", "token_sha256", "client_id", "client_host", "created_at", "created_by", "expires_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_SHA256_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: str
    name: str
    grant: str
    token_sha256: str
    client_id: str
    client_host: str
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    expires_at: float
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., grant: _Optional[str] = ..., token_sha256: _Optional[str] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ..., expires_at: _Optional[float] = ...) -> None: ...

class CredentialSeen(_message.Message):
    __slots__ = ("first_seen",)
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    first_seen: float
    def __init__(self, first_seen: _Optional[float] = ...) -> None: ...

class OAuthRegistration(_message.Message):
    __slots__ = ("client_id", "metadata_json", "registered_at")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    metadata_json: str
    registered_at: _timestamp_pb2.Timestamp
    def __init__(self, client_id: _Optional[str] = ..., metadata_json: _Optional[str] = ..., registered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PendingAuthorization(_message.Message):
    __slots__ = ("client_id", "client_name", "client_host", "redirect_uri", "redirect_uri_explicit", "code_challenge", "state", "scopes", "resource", "issuer", "expires_at")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_EXPLICIT_FIELD_NUMBER: _ClassVar[int]
    CODE_CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    client_name: str
    client_host: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    resource: str
    issuer: str
    expires_at: float
    def __init__(self, client_id: _Optional[str] = ..., client_name: _Optional[str] = ..., client_host: _Optional[str] = ..., redirect_uri: _Optional[str] = ..., redirect_uri_explicit: _Optional[bool] = ..., code_challenge: _Optional[str] = ..., state: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., resource: _Optional[str] = ..., issuer: _Optional[str] = ..., expires_at: _Optional[float] = ...) -> None: ...

class AuthorizationCodeRecord(_message.Message):
    __slots__ = ("client_id", "credential_id", "redirect_uri", "redirect_uri_explicit", "code_challenge", "scopes", "resource", "expires_at", "used")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_ID_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_EXPLICIT_FIELD_NUMBER: _ClassVar[int]
    CODE_CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    credential_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    resource: str
    expires_at: float
    used: bool
    def __init__(self, client_id: _Optional[str] = ..., credential_id: _Optional[str] = ..., redirect_uri: _Optional[str] = ..., redirect_uri_explicit: _Optional[bool] = ..., code_challenge: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., resource: _Optional[str] = ..., expires_at: _Optional[float] = ..., used: _Optional[bool] = ...) -> None: ...

class RefreshRecord(_message.Message):
    __slots__ = ("client_id", "credential_id", "scopes", "resource", "expires_at", "used")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    credential_id: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    resource: str
    expires_at: float
    used: bool
    def __init__(self, client_id: _Optional[str] = ..., credential_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., resource: _Optional[str] = ..., expires_at: _Optional[float] = ..., used: _Optional[bool] = ...) -> None: ...

class CredentialUsage(_message.Message):
    __slots__ = ("first_seen", "last_seen", "minutes")
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    MINUTES_FIELD_NUMBER: _ClassVar[int]
    first_seen: float
    last_seen: float
    minutes: _containers.RepeatedCompositeFieldContainer[UsageMinute]
    def __init__(self, first_seen: _Optional[float] = ..., last_seen: _Optional[float] = ..., minutes: _Optional[_Iterable[_Union[UsageMinute, _Mapping]]] = ...) -> None: ...

class UsageMinute(_message.Message):
    __slots__ = ("minute", "calls", "questions")
    MINUTE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    minute: int
    calls: int
    questions: int
    def __init__(self, minute: _Optional[int] = ..., calls: _Optional[int] = ..., questions: _Optional[int] = ...) -> None: ...
