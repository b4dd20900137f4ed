import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BundleProposal(_message.Message):
    __slots__ = ("name", "description", "transport", "tools")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    transport: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., transport: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ...) -> None: ...

class ToolCheck(_message.Message):
    __slots__ = ("name", "kind", "risk_level", "problems", "requirements", "hitl")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    HITL_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    risk_level: int
    problems: _containers.RepeatedScalarFieldContainer[str]
    requirements: _containers.RepeatedScalarFieldContainer[str]
    hitl: bool
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., risk_level: _Optional[int] = ..., problems: _Optional[_Iterable[str]] = ..., requirements: _Optional[_Iterable[str]] = ..., hitl: _Optional[bool] = ...) -> None: ...

class ValidationReport(_message.Message):
    __slots__ = ("name", "ok", "problems", "tools", "requirements", "risk_level")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    name: str
    ok: bool
    problems: _containers.RepeatedScalarFieldContainer[str]
    tools: _containers.RepeatedCompositeFieldContainer[ToolCheck]
    requirements: _containers.RepeatedScalarFieldContainer[str]
    risk_level: int
    def __init__(self, name: _Optional[str] = ..., ok: _Optional[bool] = ..., problems: _Optional[_Iterable[str]] = ..., tools: _Optional[_Iterable[_Union[ToolCheck, _Mapping]]] = ..., requirements: _Optional[_Iterable[str]] = ..., risk_level: _Optional[int] = ...) -> None: ...

class BundlePart(_message.Message):
    __slots__ = ("name", "kind", "sha256", "definition_sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    sha256: str
    definition_sha256: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., sha256: _Optional[str] = ..., definition_sha256: _Optional[str] = ...) -> None: ...

class ShippedServer(_message.Message):
    __slots__ = ("name", "description", "transport", "version", "bundle_sha256", "parts", "requirements", "risk_level", "shipped_at", "object")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SHA256_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    SHIPPED_AT_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    transport: str
    version: int
    bundle_sha256: str
    parts: _containers.RepeatedCompositeFieldContainer[BundlePart]
    requirements: _containers.RepeatedScalarFieldContainer[str]
    risk_level: int
    shipped_at: _timestamp_pb2.Timestamp
    object: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., transport: _Optional[str] = ..., version: _Optional[int] = ..., bundle_sha256: _Optional[str] = ..., parts: _Optional[_Iterable[_Union[BundlePart, _Mapping]]] = ..., requirements: _Optional[_Iterable[str]] = ..., risk_level: _Optional[int] = ..., shipped_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., object: _Optional[str] = ...) -> None: ...

class ShipReply(_message.Message):
    __slots__ = ("server", "report")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    server: ShippedServer
    report: ValidationReport
    def __init__(self, server: _Optional[_Union[ShippedServer, _Mapping]] = ..., report: _Optional[_Union[ValidationReport, _Mapping]] = ...) -> None: ...

class ListShippedServersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListShippedServersReply(_message.Message):
    __slots__ = ("servers",)
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[ServerStatus]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerStatus, _Mapping]]] = ...) -> None: ...

class Shippable(_message.Message):
    __slots__ = ("name", "kind", "description", "risk_level", "ready", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    description: str
    risk_level: int
    ready: bool
    reason: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., description: _Optional[str] = ..., risk_level: _Optional[int] = ..., ready: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ListShippableRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListShippableReply(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Shippable]
    def __init__(self, tools: _Optional[_Iterable[_Union[Shippable, _Mapping]]] = ...) -> None: ...

class ShippedServerRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ServerStatus(_message.Message):
    __slots__ = ("server", "state", "target", "endpoint", "running_version", "out_of_date", "stale_parts", "restarts", "last_error", "started_at", "command", "managed_by", "withheld", "delete_refused")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_VERSION_FIELD_NUMBER: _ClassVar[int]
    OUT_OF_DATE_FIELD_NUMBER: _ClassVar[int]
    STALE_PARTS_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    MANAGED_BY_FIELD_NUMBER: _ClassVar[int]
    WITHHELD_FIELD_NUMBER: _ClassVar[int]
    DELETE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    server: ShippedServer
    state: str
    target: str
    endpoint: str
    running_version: int
    out_of_date: bool
    stale_parts: _containers.RepeatedScalarFieldContainer[str]
    restarts: int
    last_error: str
    started_at: _timestamp_pb2.Timestamp
    command: str
    managed_by: str
    withheld: _containers.RepeatedScalarFieldContainer[str]
    delete_refused: str
    def __init__(self, server: _Optional[_Union[ShippedServer, _Mapping]] = ..., state: _Optional[str] = ..., target: _Optional[str] = ..., endpoint: _Optional[str] = ..., running_version: _Optional[int] = ..., out_of_date: _Optional[bool] = ..., stale_parts: _Optional[_Iterable[str]] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., command: _Optional[str] = ..., managed_by: _Optional[str] = ..., withheld: _Optional[_Iterable[str]] = ..., delete_refused: _Optional[str] = ...) -> None: ...

class LogsRequest(_message.Message):
    __slots__ = ("name", "lines")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    name: str
    lines: int
    def __init__(self, name: _Optional[str] = ..., lines: _Optional[int] = ...) -> None: ...

class LogsReply(_message.Message):
    __slots__ = ("name", "lines", "masked")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    MASKED_FIELD_NUMBER: _ClassVar[int]
    name: str
    lines: _containers.RepeatedScalarFieldContainer[str]
    masked: bool
    def __init__(self, name: _Optional[str] = ..., lines: _Optional[_Iterable[str]] = ..., masked: _Optional[bool] = ...) -> None: ...

class Target(_message.Message):
    __slots__ = ("name", "usable", "reason", "remedy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    USABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REMEDY_FIELD_NUMBER: _ClassVar[int]
    name: str
    usable: bool
    reason: str
    remedy: str
    def __init__(self, name: _Optional[str] = ..., usable: _Optional[bool] = ..., reason: _Optional[str] = ..., remedy: _Optional[str] = ...) -> None: ...

class ListTargetsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTargetsReply(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[Target]
    def __init__(self, targets: _Optional[_Iterable[_Union[Target, _Mapping]]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("name", "target", "expected_version", "expected_sha256", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_SHA256_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    expected_version: int
    expected_sha256: str
    port: int
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., expected_version: _Optional[int] = ..., expected_sha256: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class RunRecord(_message.Message):
    __slots__ = ("name", "target", "version", "bundle_sha256", "endpoint", "command", "token", "started_at", "stopped")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SHA256_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    version: int
    bundle_sha256: str
    endpoint: str
    command: str
    token: str
    started_at: _timestamp_pb2.Timestamp
    stopped: bool
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., version: _Optional[int] = ..., bundle_sha256: _Optional[str] = ..., endpoint: _Optional[str] = ..., command: _Optional[str] = ..., token: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stopped: _Optional[bool] = ...) -> None: ...

class RunPlan(_message.Message):
    __slots__ = ("name", "target", "version", "bundle_sha256", "command", "usable", "reason", "refused", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SHA256_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    USABLE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    version: int
    bundle_sha256: str
    command: str
    usable: bool
    reason: str
    refused: str
    port: int
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., version: _Optional[int] = ..., bundle_sha256: _Optional[str] = ..., command: _Optional[str] = ..., usable: _Optional[bool] = ..., reason: _Optional[str] = ..., refused: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class DeleteShippedServerRequest(_message.Message):
    __slots__ = ("name", "expected_version", "expected_sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_version: int
    expected_sha256: str
    def __init__(self, name: _Optional[str] = ..., expected_version: _Optional[int] = ..., expected_sha256: _Optional[str] = ...) -> None: ...

class DeleteShippedServerReply(_message.Message):
    __slots__ = ("server", "versions_deleted")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_DELETED_FIELD_NUMBER: _ClassVar[int]
    server: ShippedServer
    versions_deleted: int
    def __init__(self, server: _Optional[_Union[ShippedServer, _Mapping]] = ..., versions_deleted: _Optional[int] = ...) -> None: ...

class TokenReply(_message.Message):
    __slots__ = ("name", "token", "endpoint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    endpoint: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., endpoint: _Optional[str] = ...) -> None: ...

class ExportRequest(_message.Message):
    __slots__ = ("name", "target", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    port: int
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class ExportHeader(_message.Message):
    __slots__ = ("name", "target", "version", "bundle_sha256", "command")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_SHA256_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    version: int
    bundle_sha256: str
    command: str
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., version: _Optional[int] = ..., bundle_sha256: _Optional[str] = ..., command: _Optional[str] = ...) -> None: ...

class ExportChunk(_message.Message):
    __slots__ = ("path", "mode", "data")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    path: str
    mode: int
    data: bytes
    def __init__(self, path: _Optional[str] = ..., mode: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ExportPiece(_message.Message):
    __slots__ = ("header", "chunk")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: ExportHeader
    chunk: ExportChunk
    def __init__(self, header: _Optional[_Union[ExportHeader, _Mapping]] = ..., chunk: _Optional[_Union[ExportChunk, _Mapping]] = ...) -> None: ...
