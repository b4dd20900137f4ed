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

class ToolState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_STATE_UNSPECIFIED: _ClassVar[ToolState]
    TOOL_STATE_DRAFT: _ClassVar[ToolState]
    TOOL_STATE_PUBLISHED: _ClassVar[ToolState]
    TOOL_STATE_MISSING_REQUIREMENTS: _ClassVar[ToolState]

class ToolSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_SOURCE_UNSPECIFIED: _ClassVar[ToolSource]
    TOOL_SOURCE_AUTHORED: _ClassVar[ToolSource]
    TOOL_SOURCE_BUNDLED: _ClassVar[ToolSource]
    TOOL_SOURCE_CONFIGURATION: _ClassVar[ToolSource]
TOOL_STATE_UNSPECIFIED: ToolState
TOOL_STATE_DRAFT: ToolState
TOOL_STATE_PUBLISHED: ToolState
TOOL_STATE_MISSING_REQUIREMENTS: ToolState
TOOL_SOURCE_UNSPECIFIED: ToolSource
TOOL_SOURCE_AUTHORED: ToolSource
TOOL_SOURCE_BUNDLED: ToolSource
TOOL_SOURCE_CONFIGURATION: ToolSource

class ToolSummary(_message.Message):
    __slots__ = ("name", "description", "state", "source", "risk_level", "network_mode", "hosts_allow", "hitl_required", "exposed", "missing_env", "revision", "created_at", "updated_at", "tested", "configuration_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    NETWORK_MODE_FIELD_NUMBER: _ClassVar[int]
    HOSTS_ALLOW_FIELD_NUMBER: _ClassVar[int]
    HITL_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    EXPOSED_FIELD_NUMBER: _ClassVar[int]
    MISSING_ENV_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    TESTED_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    state: ToolState
    source: ToolSource
    risk_level: int
    network_mode: str
    hosts_allow: _containers.RepeatedScalarFieldContainer[str]
    hitl_required: bool
    exposed: bool
    missing_env: _containers.RepeatedScalarFieldContainer[str]
    revision: int
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    tested: bool
    configuration_key: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., state: _Optional[_Union[ToolState, str]] = ..., source: _Optional[_Union[ToolSource, str]] = ..., risk_level: _Optional[int] = ..., network_mode: _Optional[str] = ..., hosts_allow: _Optional[_Iterable[str]] = ..., hitl_required: _Optional[bool] = ..., exposed: _Optional[bool] = ..., missing_env: _Optional[_Iterable[str]] = ..., revision: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tested: _Optional[bool] = ..., configuration_key: _Optional[str] = ...) -> None: ...

class ToolRecord(_message.Message):
    __slots__ = ("spec_json", "state", "created_at", "updated_at", "last_test", "published_at")
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_TEST_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AT_FIELD_NUMBER: _ClassVar[int]
    spec_json: str
    state: ToolState
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    last_test: LastTest
    published_at: _timestamp_pb2.Timestamp
    def __init__(self, spec_json: _Optional[str] = ..., state: _Optional[_Union[ToolState, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_test: _Optional[_Union[LastTest, _Mapping]] = ..., published_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LastTest(_message.Message):
    __slots__ = ("passed", "at", "spec_sha256", "error", "duration_ms", "revision")
    PASSED_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    SPEC_SHA256_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    passed: bool
    at: _timestamp_pb2.Timestamp
    spec_sha256: str
    error: str
    duration_ms: int
    revision: int
    def __init__(self, passed: _Optional[bool] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., spec_sha256: _Optional[str] = ..., error: _Optional[str] = ..., duration_ms: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class Exposure(_message.Message):
    __slots__ = ("auto_expose", "tools", "revision")
    AUTO_EXPOSE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    auto_expose: bool
    tools: _containers.RepeatedScalarFieldContainer[str]
    revision: int
    def __init__(self, auto_expose: _Optional[bool] = ..., tools: _Optional[_Iterable[str]] = ..., revision: _Optional[int] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("include_bundled",)
    INCLUDE_BUNDLED_FIELD_NUMBER: _ClassVar[int]
    include_bundled: bool
    def __init__(self, include_bundled: _Optional[bool] = ...) -> None: ...

class ListToolsReply(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSummary]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSummary, _Mapping]]] = ...) -> None: ...

class GetToolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ToolDetail(_message.Message):
    __slots__ = ("summary", "spec_json", "last_test", "poisoning_hits", "delete_refused")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    LAST_TEST_FIELD_NUMBER: _ClassVar[int]
    POISONING_HITS_FIELD_NUMBER: _ClassVar[int]
    DELETE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    summary: ToolSummary
    spec_json: str
    last_test: LastTest
    poisoning_hits: _containers.RepeatedScalarFieldContainer[str]
    delete_refused: str
    def __init__(self, summary: _Optional[_Union[ToolSummary, _Mapping]] = ..., spec_json: _Optional[str] = ..., last_test: _Optional[_Union[LastTest, _Mapping]] = ..., poisoning_hits: _Optional[_Iterable[str]] = ..., delete_refused: _Optional[str] = ...) -> None: ...

class CheckRiskRequest(_message.Message):
    __slots__ = ("name", "spec_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    spec_json: str
    def __init__(self, name: _Optional[str] = ..., spec_json: _Optional[str] = ...) -> None: ...

class RiskReport(_message.Message):
    __slots__ = ("name", "risk_level", "reasons", "network_mode", "hosts_allow", "hitl_required", "above_baseline", "weakens_approval", "poisoning_hits", "state", "tested", "revision", "publish_refused")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RISK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_MODE_FIELD_NUMBER: _ClassVar[int]
    HOSTS_ALLOW_FIELD_NUMBER: _ClassVar[int]
    HITL_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    ABOVE_BASELINE_FIELD_NUMBER: _ClassVar[int]
    WEAKENS_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    POISONING_HITS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TESTED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_REFUSED_FIELD_NUMBER: _ClassVar[int]
    name: str
    risk_level: int
    reasons: _containers.RepeatedScalarFieldContainer[str]
    network_mode: str
    hosts_allow: _containers.RepeatedScalarFieldContainer[str]
    hitl_required: bool
    above_baseline: bool
    weakens_approval: bool
    poisoning_hits: _containers.RepeatedScalarFieldContainer[str]
    state: ToolState
    tested: bool
    revision: int
    publish_refused: str
    def __init__(self, name: _Optional[str] = ..., risk_level: _Optional[int] = ..., reasons: _Optional[_Iterable[str]] = ..., network_mode: _Optional[str] = ..., hosts_allow: _Optional[_Iterable[str]] = ..., hitl_required: _Optional[bool] = ..., above_baseline: _Optional[bool] = ..., weakens_approval: _Optional[bool] = ..., poisoning_hits: _Optional[_Iterable[str]] = ..., state: _Optional[_Union[ToolState, str]] = ..., tested: _Optional[bool] = ..., revision: _Optional[int] = ..., publish_refused: _Optional[str] = ...) -> None: ...

class SaveDraftRequest(_message.Message):
    __slots__ = ("spec_json", "expected_revision")
    SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    spec_json: str
    expected_revision: int
    def __init__(self, spec_json: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class SaveDraftReply(_message.Message):
    __slots__ = ("tool", "warnings", "created")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    tool: ToolSummary
    warnings: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    def __init__(self, tool: _Optional[_Union[ToolSummary, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ..., created: _Optional[bool] = ...) -> None: ...

class TestToolRequest(_message.Message):
    __slots__ = ("name", "arguments_json", "expected_revision")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments_json: str
    expected_revision: int
    def __init__(self, name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class GuardBlock(_message.Message):
    __slots__ = ("reason", "message")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    message: str
    def __init__(self, reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class TestReport(_message.Message):
    __slots__ = ("name", "passed", "result_json", "error", "console", "duration_ms", "guard_blocks", "local_pass", "warnings", "published")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONSOLE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    GUARD_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    LOCAL_PASS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_FIELD_NUMBER: _ClassVar[int]
    name: str
    passed: bool
    result_json: str
    error: str
    console: _containers.RepeatedScalarFieldContainer[str]
    duration_ms: int
    guard_blocks: _containers.RepeatedCompositeFieldContainer[GuardBlock]
    local_pass: bool
    warnings: _containers.RepeatedScalarFieldContainer[str]
    published: bool
    def __init__(self, name: _Optional[str] = ..., passed: _Optional[bool] = ..., result_json: _Optional[str] = ..., error: _Optional[str] = ..., console: _Optional[_Iterable[str]] = ..., duration_ms: _Optional[int] = ..., guard_blocks: _Optional[_Iterable[_Union[GuardBlock, _Mapping]]] = ..., local_pass: _Optional[bool] = ..., warnings: _Optional[_Iterable[str]] = ..., published: _Optional[bool] = ...) -> None: ...

class PublishToolRequest(_message.Message):
    __slots__ = ("name", "expected_revision")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_revision: int
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class DeleteToolRequest(_message.Message):
    __slots__ = ("name", "expected_revision")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_revision: int
    def __init__(self, name: _Optional[str] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class DeleteToolReply(_message.Message):
    __slots__ = ("name", "state")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: ToolState
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[ToolState, str]] = ...) -> None: ...

class GetExposureRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetExposureRequest(_message.Message):
    __slots__ = ("auto_expose", "tools", "expected_revision", "expected_tools")
    class ExpectedToolsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    AUTO_EXPOSE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    auto_expose: bool
    tools: _containers.RepeatedScalarFieldContainer[str]
    expected_revision: int
    expected_tools: _containers.ScalarMap[str, int]
    def __init__(self, auto_expose: _Optional[bool] = ..., tools: _Optional[_Iterable[str]] = ..., expected_revision: _Optional[int] = ..., expected_tools: _Optional[_Mapping[str, int]] = ...) -> None: ...
