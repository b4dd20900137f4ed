import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from saip.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Transport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSPORT_UNSPECIFIED: _ClassVar[Transport]
    TRANSPORT_STREAMABLE_HTTP: _ClassVar[Transport]
    TRANSPORT_SSE: _ClassVar[Transport]
    TRANSPORT_STDIO: _ClassVar[Transport]

class Trust(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRUST_UNSPECIFIED: _ClassVar[Trust]
    TRUST_VENDOR: _ClassVar[Trust]
    TRUST_COMMUNITY: _ClassVar[Trust]

class ServerSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVER_SOURCE_UNSPECIFIED: _ClassVar[ServerSource]
    SERVER_SOURCE_CATALOG: _ClassVar[ServerSource]
    SERVER_SOURCE_CUSTOM: _ClassVar[ServerSource]
    SERVER_SOURCE_CONFIGURATION: _ClassVar[ServerSource]

class ConnectionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONNECTION_STATE_UNSPECIFIED: _ClassVar[ConnectionState]
    CONNECTION_STATE_CONNECTING: _ClassVar[ConnectionState]
    CONNECTION_STATE_CONNECTED: _ClassVar[ConnectionState]
    CONNECTION_STATE_FAILED: _ClassVar[ConnectionState]
    CONNECTION_STATE_DISABLED: _ClassVar[ConnectionState]

class FingerprintStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINGERPRINT_STATUS_UNSPECIFIED: _ClassVar[FingerprintStatus]
    FINGERPRINT_STATUS_ACTIVE: _ClassVar[FingerprintStatus]
    FINGERPRINT_STATUS_AWAITING_REREVIEW: _ClassVar[FingerprintStatus]
TRANSPORT_UNSPECIFIED: Transport
TRANSPORT_STREAMABLE_HTTP: Transport
TRANSPORT_SSE: Transport
TRANSPORT_STDIO: Transport
TRUST_UNSPECIFIED: Trust
TRUST_VENDOR: Trust
TRUST_COMMUNITY: Trust
SERVER_SOURCE_UNSPECIFIED: ServerSource
SERVER_SOURCE_CATALOG: ServerSource
SERVER_SOURCE_CUSTOM: ServerSource
SERVER_SOURCE_CONFIGURATION: ServerSource
CONNECTION_STATE_UNSPECIFIED: ConnectionState
CONNECTION_STATE_CONNECTING: ConnectionState
CONNECTION_STATE_CONNECTED: ConnectionState
CONNECTION_STATE_FAILED: ConnectionState
CONNECTION_STATE_DISABLED: ConnectionState
FINGERPRINT_STATUS_UNSPECIFIED: FingerprintStatus
FINGERPRINT_STATUS_ACTIVE: FingerprintStatus
FINGERPRINT_STATUS_AWAITING_REREVIEW: FingerprintStatus

class Server(_message.Message):
    __slots__ = ("id", "name", "transport", "url", "command", "args", "headers", "env", "docs_url", "trust", "source", "description", "oauth_scopes", "catalog_name", "revision")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    DOCS_URL_FIELD_NUMBER: _ClassVar[int]
    TRUST_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OAUTH_SCOPES_FIELD_NUMBER: _ClassVar[int]
    CATALOG_NAME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    transport: Transport
    url: str
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    headers: _containers.ScalarMap[str, str]
    env: _containers.ScalarMap[str, str]
    docs_url: str
    trust: Trust
    source: ServerSource
    description: str
    oauth_scopes: _containers.RepeatedScalarFieldContainer[str]
    catalog_name: str
    revision: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., transport: _Optional[_Union[Transport, str]] = ..., url: _Optional[str] = ..., command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., headers: _Optional[_Mapping[str, str]] = ..., env: _Optional[_Mapping[str, str]] = ..., docs_url: _Optional[str] = ..., trust: _Optional[_Union[Trust, str]] = ..., source: _Optional[_Union[ServerSource, str]] = ..., description: _Optional[str] = ..., oauth_scopes: _Optional[_Iterable[str]] = ..., catalog_name: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class CatalogEntry(_message.Message):
    __slots__ = ("name", "description", "transport", "url", "command", "args", "trust", "docs_url", "headers", "env")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    TRUST_FIELD_NUMBER: _ClassVar[int]
    DOCS_URL_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    transport: Transport
    url: str
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    trust: Trust
    docs_url: str
    headers: _containers.ScalarMap[str, str]
    env: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., transport: _Optional[_Union[Transport, str]] = ..., url: _Optional[str] = ..., command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., trust: _Optional[_Union[Trust, str]] = ..., docs_url: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., env: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpstreamTool(_message.Message):
    __slots__ = ("name", "title", "description", "input_schema_json", "read_only", "destructive", "idempotent", "open_world", "has_annotations", "read_only_set", "risk_level", "risk_reasons", "poisoning", "fingerprint", "hash")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_FIELD_NUMBER: _ClassVar[int]
    HAS_ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_SET_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RISK_REASONS_FIELD_NUMBER: _ClassVar[int]
    POISONING_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    name: str
    title: str
    description: str
    input_schema_json: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    has_annotations: bool
    read_only_set: bool
    risk_level: int
    risk_reasons: _containers.RepeatedScalarFieldContainer[str]
    poisoning: _containers.RepeatedScalarFieldContainer[str]
    fingerprint: FingerprintStatus
    hash: str
    def __init__(self, name: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., read_only: _Optional[bool] = ..., destructive: _Optional[bool] = ..., idempotent: _Optional[bool] = ..., open_world: _Optional[bool] = ..., has_annotations: _Optional[bool] = ..., read_only_set: _Optional[bool] = ..., risk_level: _Optional[int] = ..., risk_reasons: _Optional[_Iterable[str]] = ..., poisoning: _Optional[_Iterable[str]] = ..., fingerprint: _Optional[_Union[FingerprintStatus, str]] = ..., hash: _Optional[str] = ...) -> None: ...

class UpstreamStatus(_message.Message):
    __slots__ = ("server", "state", "reason", "server_name", "server_version", "protocol_version", "capabilities", "tool_count", "risk_level", "risk_reasons", "since")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RISK_REASONS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    server: Server
    state: ConnectionState
    reason: str
    server_name: str
    server_version: str
    protocol_version: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    tool_count: int
    risk_level: int
    risk_reasons: _containers.RepeatedScalarFieldContainer[str]
    since: _timestamp_pb2.Timestamp
    def __init__(self, server: _Optional[_Union[Server, _Mapping]] = ..., state: _Optional[_Union[ConnectionState, str]] = ..., reason: _Optional[str] = ..., server_name: _Optional[str] = ..., server_version: _Optional[str] = ..., protocol_version: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., tool_count: _Optional[int] = ..., risk_level: _Optional[int] = ..., risk_reasons: _Optional[_Iterable[str]] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ConnectionChanged(_message.Message):
    __slots__ = ("server_id", "state", "reason", "since")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    state: ConnectionState
    reason: str
    since: _timestamp_pb2.Timestamp
    def __init__(self, server_id: _Optional[str] = ..., state: _Optional[_Union[ConnectionState, str]] = ..., reason: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListServersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListServersReply(_message.Message):
    __slots__ = ("servers",)
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[UpstreamStatus]
    def __init__(self, servers: _Optional[_Iterable[_Union[UpstreamStatus, _Mapping]]] = ...) -> None: ...

class SearchCatalogRequest(_message.Message):
    __slots__ = ("query",)
    QUERY_FIELD_NUMBER: _ClassVar[int]
    query: str
    def __init__(self, query: _Optional[str] = ...) -> None: ...

class SearchCatalogReply(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[CatalogEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[CatalogEntry, _Mapping]]] = ...) -> None: ...

class PreviewRiskRequest(_message.Message):
    __slots__ = ("server_id", "catalog_name", "server")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    CATALOG_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    catalog_name: str
    server: Server
    def __init__(self, server_id: _Optional[str] = ..., catalog_name: _Optional[str] = ..., server: _Optional[_Union[Server, _Mapping]] = ...) -> None: ...

class RiskPreview(_message.Message):
    __slots__ = ("risk_level", "reasons", "floor", "tools")
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    FLOOR_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    risk_level: int
    reasons: _containers.RepeatedScalarFieldContainer[str]
    floor: bool
    tools: _containers.RepeatedCompositeFieldContainer[UpstreamTool]
    def __init__(self, risk_level: _Optional[int] = ..., reasons: _Optional[_Iterable[str]] = ..., floor: _Optional[bool] = ..., tools: _Optional[_Iterable[_Union[UpstreamTool, _Mapping]]] = ...) -> None: ...

class GetServerToolsRequest(_message.Message):
    __slots__ = ("server_id",)
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    def __init__(self, server_id: _Optional[str] = ...) -> None: ...

class ServerTools(_message.Message):
    __slots__ = ("status", "tools")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    status: UpstreamStatus
    tools: _containers.RepeatedCompositeFieldContainer[UpstreamTool]
    def __init__(self, status: _Optional[_Union[UpstreamStatus, _Mapping]] = ..., tools: _Optional[_Iterable[_Union[UpstreamTool, _Mapping]]] = ...) -> None: ...

class TestConnectionRequest(_message.Message):
    __slots__ = ("server_id", "server")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    server: Server
    def __init__(self, server_id: _Optional[str] = ..., server: _Optional[_Union[Server, _Mapping]] = ...) -> None: ...

class ConnectionReport(_message.Message):
    __slots__ = ("ok", "message", "server_name", "server_version", "protocol_version", "tools", "risk_level", "risk_reasons")
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RISK_REASONS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    message: str
    server_name: str
    server_version: str
    protocol_version: str
    tools: _containers.RepeatedCompositeFieldContainer[UpstreamTool]
    risk_level: int
    risk_reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ..., server_name: _Optional[str] = ..., server_version: _Optional[str] = ..., protocol_version: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[UpstreamTool, _Mapping]]] = ..., risk_level: _Optional[int] = ..., risk_reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class ReconnectRequest(_message.Message):
    __slots__ = ("server_id",)
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    def __init__(self, server_id: _Optional[str] = ...) -> None: ...

class AddServerRequest(_message.Message):
    __slots__ = ("server", "catalog_name")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    CATALOG_NAME_FIELD_NUMBER: _ClassVar[int]
    server: Server
    catalog_name: str
    def __init__(self, server: _Optional[_Union[Server, _Mapping]] = ..., catalog_name: _Optional[str] = ...) -> None: ...

class RemoveServerRequest(_message.Message):
    __slots__ = ("server_id", "expected_revision")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    expected_revision: int
    def __init__(self, server_id: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class RemoveServerReply(_message.Message):
    __slots__ = ("server_id", "withdrawn")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    WITHDRAWN_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    withdrawn: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, server_id: _Optional[str] = ..., withdrawn: _Optional[_Iterable[str]] = ...) -> None: ...

class Member(_message.Message):
    __slots__ = ("server_id", "tool", "alias", "hitl")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    HITL_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    tool: str
    alias: str
    hitl: bool
    def __init__(self, server_id: _Optional[str] = ..., tool: _Optional[str] = ..., alias: _Optional[str] = ..., hitl: _Optional[bool] = ...) -> None: ...

class Composition(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[Member]
    def __init__(self, members: _Optional[_Iterable[_Union[Member, _Mapping]]] = ...) -> None: ...

class GetCompositionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExposedTool(_message.Message):
    __slots__ = ("member", "name", "inherent_level", "effective_level", "served", "withheld", "fingerprint", "upstream", "poisoning", "ledger_hash", "definition_json")
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INHERENT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    SERVED_FIELD_NUMBER: _ClassVar[int]
    WITHHELD_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_FIELD_NUMBER: _ClassVar[int]
    POISONING_FIELD_NUMBER: _ClassVar[int]
    LEDGER_HASH_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_JSON_FIELD_NUMBER: _ClassVar[int]
    member: Member
    name: str
    inherent_level: int
    effective_level: int
    served: bool
    withheld: str
    fingerprint: FingerprintStatus
    upstream: ConnectionState
    poisoning: _containers.RepeatedScalarFieldContainer[str]
    ledger_hash: str
    definition_json: str
    def __init__(self, member: _Optional[_Union[Member, _Mapping]] = ..., name: _Optional[str] = ..., inherent_level: _Optional[int] = ..., effective_level: _Optional[int] = ..., served: _Optional[bool] = ..., withheld: _Optional[str] = ..., fingerprint: _Optional[_Union[FingerprintStatus, str]] = ..., upstream: _Optional[_Union[ConnectionState, str]] = ..., poisoning: _Optional[_Iterable[str]] = ..., ledger_hash: _Optional[str] = ..., definition_json: _Optional[str] = ...) -> None: ...

class CompositionView(_message.Message):
    __slots__ = ("tools", "revision", "cap")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ExposedTool]
    revision: int
    cap: int
    def __init__(self, tools: _Optional[_Iterable[_Union[ExposedTool, _Mapping]]] = ..., revision: _Optional[int] = ..., cap: _Optional[int] = ...) -> None: ...

class HitlChange(_message.Message):
    __slots__ = ("alias", "hitl")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    HITL_FIELD_NUMBER: _ClassVar[int]
    alias: str
    hitl: bool
    def __init__(self, alias: _Optional[str] = ..., hitl: _Optional[bool] = ...) -> None: ...

class ExposureChange(_message.Message):
    __slots__ = ("add", "remove", "set_hitl", "acknowledge_changed", "expected_revision", "taken")
    ADD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    SET_HITL_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    TAKEN_FIELD_NUMBER: _ClassVar[int]
    add: _containers.RepeatedCompositeFieldContainer[Member]
    remove: _containers.RepeatedScalarFieldContainer[str]
    set_hitl: _containers.RepeatedCompositeFieldContainer[HitlChange]
    acknowledge_changed: _containers.RepeatedScalarFieldContainer[str]
    expected_revision: int
    taken: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, add: _Optional[_Iterable[_Union[Member, _Mapping]]] = ..., remove: _Optional[_Iterable[str]] = ..., set_hitl: _Optional[_Iterable[_Union[HitlChange, _Mapping]]] = ..., acknowledge_changed: _Optional[_Iterable[str]] = ..., expected_revision: _Optional[int] = ..., taken: _Optional[_Iterable[str]] = ...) -> None: ...

class PlannedMember(_message.Message):
    __slots__ = ("name", "member", "inherent_level", "effective_level", "without_approval", "poisoning")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    INHERENT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    WITHOUT_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    POISONING_FIELD_NUMBER: _ClassVar[int]
    name: str
    member: Member
    inherent_level: int
    effective_level: int
    without_approval: bool
    poisoning: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., member: _Optional[_Union[Member, _Mapping]] = ..., inherent_level: _Optional[int] = ..., effective_level: _Optional[int] = ..., without_approval: _Optional[bool] = ..., poisoning: _Optional[_Iterable[str]] = ...) -> None: ...

class Refusal(_message.Message):
    __slots__ = ("name", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Acknowledgement(_message.Message):
    __slots__ = ("name", "server_id", "tool", "changed_fields", "diff", "new_hash", "poisoning")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    NEW_HASH_FIELD_NUMBER: _ClassVar[int]
    POISONING_FIELD_NUMBER: _ClassVar[int]
    name: str
    server_id: str
    tool: str
    changed_fields: _containers.RepeatedScalarFieldContainer[str]
    diff: str
    new_hash: str
    poisoning: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., server_id: _Optional[str] = ..., tool: _Optional[str] = ..., changed_fields: _Optional[_Iterable[str]] = ..., diff: _Optional[str] = ..., new_hash: _Optional[str] = ..., poisoning: _Optional[_Iterable[str]] = ...) -> None: ...

class ExposurePlan(_message.Message):
    __slots__ = ("added", "removed", "hitl_changed", "acknowledged", "refused", "revision", "cap", "high_risk")
    ADDED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    HITL_CHANGED_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    HIGH_RISK_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedCompositeFieldContainer[PlannedMember]
    removed: _containers.RepeatedScalarFieldContainer[str]
    hitl_changed: _containers.RepeatedCompositeFieldContainer[PlannedMember]
    acknowledged: _containers.RepeatedCompositeFieldContainer[Acknowledgement]
    refused: _containers.RepeatedCompositeFieldContainer[Refusal]
    revision: int
    cap: int
    high_risk: bool
    def __init__(self, added: _Optional[_Iterable[_Union[PlannedMember, _Mapping]]] = ..., removed: _Optional[_Iterable[str]] = ..., hitl_changed: _Optional[_Iterable[_Union[PlannedMember, _Mapping]]] = ..., acknowledged: _Optional[_Iterable[_Union[Acknowledgement, _Mapping]]] = ..., refused: _Optional[_Iterable[_Union[Refusal, _Mapping]]] = ..., revision: _Optional[int] = ..., cap: _Optional[int] = ..., high_risk: _Optional[bool] = ...) -> None: ...

class ApplyExposureRequest(_message.Message):
    __slots__ = ("change", "acknowledged_hashes")
    class AcknowledgedHashesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_HASHES_FIELD_NUMBER: _ClassVar[int]
    change: ExposureChange
    acknowledged_hashes: _containers.ScalarMap[str, str]
    def __init__(self, change: _Optional[_Union[ExposureChange, _Mapping]] = ..., acknowledged_hashes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ExposureApplied(_message.Message):
    __slots__ = ("plan", "composition")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    COMPOSITION_FIELD_NUMBER: _ClassVar[int]
    plan: ExposurePlan
    composition: CompositionView
    def __init__(self, plan: _Optional[_Union[ExposurePlan, _Mapping]] = ..., composition: _Optional[_Union[CompositionView, _Mapping]] = ...) -> None: ...

class LedgerRecord(_message.Message):
    __slots__ = ("server_id", "tool", "hash", "definition_json", "status", "pending_hash", "pending_definition_json", "changed_fields", "first_seen", "changed_at")
    SERVER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_JSON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PENDING_HASH_FIELD_NUMBER: _ClassVar[int]
    PENDING_DEFINITION_JSON_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    CHANGED_AT_FIELD_NUMBER: _ClassVar[int]
    server_id: str
    tool: str
    hash: str
    definition_json: str
    status: FingerprintStatus
    pending_hash: str
    pending_definition_json: str
    changed_fields: _containers.RepeatedScalarFieldContainer[str]
    first_seen: _timestamp_pb2.Timestamp
    changed_at: _timestamp_pb2.Timestamp
    def __init__(self, server_id: _Optional[str] = ..., tool: _Optional[str] = ..., hash: _Optional[str] = ..., definition_json: _Optional[str] = ..., status: _Optional[_Union[FingerprintStatus, str]] = ..., pending_hash: _Optional[str] = ..., pending_definition_json: _Optional[str] = ..., changed_fields: _Optional[_Iterable[str]] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., changed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
