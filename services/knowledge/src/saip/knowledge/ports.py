"""What the knowledge rules need from outside, as protocols, and the values they exchange: the catalog (the
saip-knowledge bucket, `clients.KvCatalog`), the originals (the saip-documents object store, `clients.ObjectOriginals`),
the vector index (Qdrant Edge in-process, `edge.EdgeIndex`, or a Qdrant server through qdrant-client,
`qdrant.QdrantIndex`), the guarded fetch for ingest by URL
(`clients.GuardedFetcher`) and the optional dense encoder (`dense.DenseEncoder`). tests/unit/knowledge/fakes.py holds
in-memory ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from saip.common.netguard import Binding
from saip.knowledge import chunking, sparse
from saip.v1 import knowledge_pb2


@dataclass(frozen=True)
class IndexedChunk:
    """A chunk with its lexical vector (and its dense one, with the dense encoder), as the index stores it."""

    chunk: chunking.Chunk
    vector: sparse.SparseVector
    dense: list[float] | None = None


@dataclass(frozen=True)
class Hit:
    """One chunk found by a search, with its score in that ranking."""

    ingest_id: str
    position: int
    start: int
    end: int
    page: int
    score: float
    text: str


@dataclass(frozen=True)
class SnapshotManifest:
    """What a snapshot holds: its collection (and so its dense model, if any) and the ingests it has the chunks of."""

    collection: str
    dense: tuple[str, int] | None
    ingest_ids: tuple[str, ...]
    chunks: int


@dataclass(frozen=True)
class Fetched:
    body: bytes
    content_type: str
    url: str  # where the body came from, after redirects


class Catalog(Protocol):
    """Documents, pipelines and knowledge tools, read from a snapshot every write has reached.

    Creating what exists raises AlreadyExists (a second replica may create the same item first).
    """

    def documents(self) -> list[knowledge_pb2.Document]: ...
    def document(self, document_id: str) -> knowledge_pb2.Document | None: ...
    def pipelines(self) -> list[knowledge_pb2.Pipeline]: ...
    def pipeline(self, pipeline_id: str) -> knowledge_pb2.Pipeline | None: ...
    def tools(self) -> list[knowledge_pb2.KnowledgeTool]: ...
    def tool(self, name: str) -> knowledge_pb2.KnowledgeTool | None: ...
    async def create_document(self, document: knowledge_pb2.Document) -> None: ...
    async def delete_document(self, document_id: str) -> None: ...
    async def put_pipeline(self, pipeline: knowledge_pb2.Pipeline, *, create: bool) -> None: ...
    async def delete_pipeline(self, pipeline_id: str) -> None: ...
    async def create_tool(self, tool: knowledge_pb2.KnowledgeTool) -> None: ...
    async def delete_tool(self, name: str) -> None: ...


class Originals(Protocol):
    """Each document's original bytes, keyed by ingest id (what a re-index reads again)."""

    async def put(self, key: str, data: bytes, *, description: str) -> None: ...
    async def get(self, key: str) -> bytes:
        """The bytes; NotFound when they are missing."""
        ...

    async def delete(self, key: str) -> None:
        """Remove them; one already gone is what was wanted."""
        ...


class Index(Protocol):
    """The vector store: chunks by ingest id."""

    async def add(self, ingest_id: str, document_id: str, chunks: Sequence[IndexedChunk]) -> None: ...
    async def remove(self, ingest_id: str) -> None: ...
    async def count(self, ingest_id: str | None = None) -> int: ...
    async def search(self, query: sparse.SparseVector, ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        """The best chunks by BM25 (with IDF), best first."""
        ...

    async def search_dense(self, query: list[float], ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        """The best chunks by cosine similarity to a unit query vector, best first (the score is the cosine)."""
        ...

    async def snapshot(self, ingest_ids: Sequence[str], target: Path) -> SnapshotManifest:
        """These ingests' chunks as a Qdrant Edge shard snapshot at `target`, what a shipped knowledge tool opens."""
        ...

    def describe(self) -> str: ...


class Dense(Protocol):
    """The optional dense encoder."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


class Fetcher(Protocol):
    """Ingest by URL: the body of a public page, capped; a refused URL raises Refused. `secrets` are substituted
    for their `${NAME}` in requests to their hosts only."""

    async def fetch(self, url: str, max_bytes: int, secrets: Sequence[Binding] = ()) -> Fetched: ...
