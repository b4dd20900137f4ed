import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from saip.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Document(_message.Message):
    __slots__ = ("id", "name", "source_kind", "source", "media_type", "size_bytes", "sha256", "chunks", "created_at", "managed_by", "title", "keywords", "pages", "ingest_id", "fingerprint", "delete_refused")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    MANAGED_BY_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    KEYWORDS_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    INGEST_ID_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    DELETE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    source_kind: str
    source: str
    media_type: str
    size_bytes: int
    sha256: str
    chunks: int
    created_at: _timestamp_pb2.Timestamp
    managed_by: str
    title: str
    keywords: _containers.RepeatedScalarFieldContainer[str]
    pages: int
    ingest_id: str
    fingerprint: str
    delete_refused: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., source_kind: _Optional[str] = ..., source: _Optional[str] = ..., media_type: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., chunks: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., managed_by: _Optional[str] = ..., title: _Optional[str] = ..., keywords: _Optional[_Iterable[str]] = ..., pages: _Optional[int] = ..., ingest_id: _Optional[str] = ..., fingerprint: _Optional[str] = ..., delete_refused: _Optional[str] = ...) -> None: ...

class Pipeline(_message.Message):
    __slots__ = ("id", "name", "document_ids", "top_k", "threshold", "rerank", "managed_by", "updated_at", "document_names", "scope_names", "fingerprint", "delete_refused")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    RERANK_FIELD_NUMBER: _ClassVar[int]
    MANAGED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_NAMES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_NAMES_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    DELETE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    top_k: int
    threshold: float
    rerank: bool
    managed_by: str
    updated_at: _timestamp_pb2.Timestamp
    document_names: _containers.RepeatedScalarFieldContainer[str]
    scope_names: _containers.RepeatedScalarFieldContainer[str]
    fingerprint: str
    delete_refused: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., document_ids: _Optional[_Iterable[str]] = ..., top_k: _Optional[int] = ..., threshold: _Optional[float] = ..., rerank: _Optional[bool] = ..., managed_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., document_names: _Optional[_Iterable[str]] = ..., scope_names: _Optional[_Iterable[str]] = ..., fingerprint: _Optional[str] = ..., delete_refused: _Optional[str] = ...) -> None: ...

class KnowledgeTool(_message.Message):
    __slots__ = ("name", "description", "pipeline_id", "published_at", "pipeline_name", "fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_ID_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AT_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_NAME_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    pipeline_id: str
    published_at: _timestamp_pb2.Timestamp
    pipeline_name: str
    fingerprint: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., pipeline_id: _Optional[str] = ..., published_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pipeline_name: _Optional[str] = ..., fingerprint: _Optional[str] = ...) -> None: ...

class IngestDocumentRequest(_message.Message):
    __slots__ = ("path", "url", "text", "upload", "name")
    PATH_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    path: str
    url: str
    text: str
    upload: Upload
    name: str
    def __init__(self, path: _Optional[str] = ..., url: _Optional[str] = ..., text: _Optional[str] = ..., upload: _Optional[_Union[Upload, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class Upload(_message.Message):
    __slots__ = ("filename", "content")
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    filename: str
    content: bytes
    def __init__(self, filename: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...

class IngestProgress(_message.Message):
    __slots__ = ("done", "total", "message")
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    done: int
    total: int
    message: str
    def __init__(self, done: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class IngestEvent(_message.Message):
    __slots__ = ("progress", "done")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    progress: IngestProgress
    done: IngestedDocument
    def __init__(self, progress: _Optional[_Union[IngestProgress, _Mapping]] = ..., done: _Optional[_Union[IngestedDocument, _Mapping]] = ...) -> None: ...

class IngestedDocument(_message.Message):
    __slots__ = ("document", "created_default_pipeline")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_DEFAULT_PIPELINE_FIELD_NUMBER: _ClassVar[int]
    document: Document
    created_default_pipeline: bool
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., created_default_pipeline: _Optional[bool] = ...) -> None: ...

class ListDocumentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDocumentsReply(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[Document]
    def __init__(self, documents: _Optional[_Iterable[_Union[Document, _Mapping]]] = ...) -> None: ...

class GetDocumentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("name", "expected_fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_fingerprint: str
    def __init__(self, name: _Optional[str] = ..., expected_fingerprint: _Optional[str] = ...) -> None: ...

class DeleteDocumentReply(_message.Message):
    __slots__ = ("document", "chunks_deleted")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    document: Document
    chunks_deleted: int
    def __init__(self, document: _Optional[_Union[Document, _Mapping]] = ..., chunks_deleted: _Optional[int] = ...) -> None: ...

class ListPipelinesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPipelinesReply(_message.Message):
    __slots__ = ("pipelines",)
    PIPELINES_FIELD_NUMBER: _ClassVar[int]
    pipelines: _containers.RepeatedCompositeFieldContainer[Pipeline]
    def __init__(self, pipelines: _Optional[_Iterable[_Union[Pipeline, _Mapping]]] = ...) -> None: ...

class ApplyPipelineRequest(_message.Message):
    __slots__ = ("name", "documents", "top_k", "threshold", "rerank")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    RERANK_FIELD_NUMBER: _ClassVar[int]
    name: str
    documents: _containers.RepeatedScalarFieldContainer[str]
    top_k: int
    threshold: float
    rerank: bool
    def __init__(self, name: _Optional[str] = ..., documents: _Optional[_Iterable[str]] = ..., top_k: _Optional[int] = ..., threshold: _Optional[float] = ..., rerank: _Optional[bool] = ...) -> None: ...

class ApplyPipelineReply(_message.Message):
    __slots__ = ("pipeline", "created")
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    pipeline: Pipeline
    created: bool
    def __init__(self, pipeline: _Optional[_Union[Pipeline, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetPipelineRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeletePipelineRequest(_message.Message):
    __slots__ = ("name", "expected_fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_fingerprint: str
    def __init__(self, name: _Optional[str] = ..., expected_fingerprint: _Optional[str] = ...) -> None: ...

class DeletePipelineReply(_message.Message):
    __slots__ = ("pipeline",)
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    pipeline: Pipeline
    def __init__(self, pipeline: _Optional[_Union[Pipeline, _Mapping]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("pipeline", "query", "top_k")
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    pipeline: str
    query: str
    top_k: int
    def __init__(self, pipeline: _Optional[str] = ..., query: _Optional[str] = ..., top_k: _Optional[int] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("document_id", "document_name", "position", "start", "end", "page", "score", "relevance", "text", "source")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    document_name: str
    position: int
    start: int
    end: int
    page: int
    score: float
    relevance: float
    text: str
    source: str
    def __init__(self, document_id: _Optional[str] = ..., document_name: _Optional[str] = ..., position: _Optional[int] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., page: _Optional[int] = ..., score: _Optional[float] = ..., relevance: _Optional[float] = ..., text: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class SearchReply(_message.Message):
    __slots__ = ("hits", "pipeline", "dropped_below_threshold")
    HITS_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    DROPPED_BELOW_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    pipeline: Pipeline
    dropped_below_threshold: int
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., pipeline: _Optional[_Union[Pipeline, _Mapping]] = ..., dropped_below_threshold: _Optional[int] = ...) -> None: ...

class SuggestToolsRequest(_message.Message):
    __slots__ = ("pipeline",)
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    pipeline: str
    def __init__(self, pipeline: _Optional[str] = ...) -> None: ...

class ToolSuggestion(_message.Message):
    __slots__ = ("name", "description", "pipeline", "documents", "published_as")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_AS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    pipeline: str
    documents: _containers.RepeatedScalarFieldContainer[str]
    published_as: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., pipeline: _Optional[str] = ..., documents: _Optional[_Iterable[str]] = ..., published_as: _Optional[str] = ...) -> None: ...

class SuggestToolsReply(_message.Message):
    __slots__ = ("suggestions",)
    SUGGESTIONS_FIELD_NUMBER: _ClassVar[int]
    suggestions: _containers.RepeatedCompositeFieldContainer[ToolSuggestion]
    def __init__(self, suggestions: _Optional[_Iterable[_Union[ToolSuggestion, _Mapping]]] = ...) -> None: ...

class PublishKnowledgeToolRequest(_message.Message):
    __slots__ = ("name", "description", "pipeline", "expected_fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    pipeline: str
    expected_fingerprint: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., pipeline: _Optional[str] = ..., expected_fingerprint: _Optional[str] = ...) -> None: ...

class PublishKnowledgeToolReply(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: KnowledgeTool
    def __init__(self, tool: _Optional[_Union[KnowledgeTool, _Mapping]] = ...) -> None: ...

class GetKnowledgeToolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UnpublishKnowledgeToolRequest(_message.Message):
    __slots__ = ("name", "expected_fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    expected_fingerprint: str
    def __init__(self, name: _Optional[str] = ..., expected_fingerprint: _Optional[str] = ...) -> None: ...

class UnpublishKnowledgeToolReply(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: KnowledgeTool
    def __init__(self, tool: _Optional[_Union[KnowledgeTool, _Mapping]] = ...) -> None: ...

class GetKnowledgeStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetKnowledgeStatusReply(_message.Message):
    __slots__ = ("documents", "chunks", "pipelines", "tools", "vector_store", "ingest_roots", "encoder", "max_document_bytes")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    PIPELINES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_STORE_FIELD_NUMBER: _ClassVar[int]
    INGEST_ROOTS_FIELD_NUMBER: _ClassVar[int]
    ENCODER_FIELD_NUMBER: _ClassVar[int]
    MAX_DOCUMENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    documents: int
    chunks: int
    pipelines: int
    tools: _containers.RepeatedCompositeFieldContainer[KnowledgeTool]
    vector_store: str
    ingest_roots: _containers.RepeatedScalarFieldContainer[str]
    encoder: str
    max_document_bytes: int
    def __init__(self, documents: _Optional[int] = ..., chunks: _Optional[int] = ..., pipelines: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[KnowledgeTool, _Mapping]]] = ..., vector_store: _Optional[str] = ..., ingest_roots: _Optional[_Iterable[str]] = ..., encoder: _Optional[str] = ..., max_document_bytes: _Optional[int] = ...) -> None: ...

class DescribeKnowledgeToolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class KnowledgeToolDefinition(_message.Message):
    __slots__ = ("tool", "pipeline", "documents")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    tool: KnowledgeTool
    pipeline: Pipeline
    documents: _containers.RepeatedCompositeFieldContainer[Document]
    def __init__(self, tool: _Optional[_Union[KnowledgeTool, _Mapping]] = ..., pipeline: _Optional[_Union[Pipeline, _Mapping]] = ..., documents: _Optional[_Iterable[_Union[Document, _Mapping]]] = ...) -> None: ...

class SnapshotPiece(_message.Message):
    __slots__ = ("definition", "data")
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    definition: KnowledgeToolDefinition
    data: bytes
    def __init__(self, definition: _Optional[_Union[KnowledgeToolDefinition, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...
