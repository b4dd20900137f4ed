"""In-memory fakes of the knowledge rules' ports (it holds no tests itself): a catalog of dicts, originals kept by key,
an index that ranks by the dot product of the vectors it was given, a fetch that answers from a table; and the rules
wired over them, as the service wires them over NATS, Qdrant and the network guard."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.lowlevel

from saip.common.netguard import Binding
from saip.common.secret_source import SecretSource
from saip.knowledge import sparse
from saip.knowledge.errors import AlreadyExists, NotFound, Refused, StoreUnavailable
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.ports import Fetched, Fetcher, Hit, IndexedChunk
from saip.knowledge.rules import Rules
from saip.v1 import knowledge_pb2

MAX_BYTES = 4 << 20  # the ingest limit of the rules built here


@dataclass
class MemoryCatalog:
    """The catalog as three dicts; creating what exists is refused, as the bucket refuses a second create."""

    documents_by_id: dict[str, knowledge_pb2.Document] = field(default_factory=dict)
    pipelines_by_id: dict[str, knowledge_pb2.Pipeline] = field(default_factory=dict)
    tools_by_name: dict[str, knowledge_pb2.KnowledgeTool] = field(default_factory=dict)

    def documents(self) -> list[knowledge_pb2.Document]:
        return list(self.documents_by_id.values())

    def document(self, document_id: str) -> knowledge_pb2.Document | None:
        return self.documents_by_id.get(document_id)

    def pipelines(self) -> list[knowledge_pb2.Pipeline]:
        return list(self.pipelines_by_id.values())

    def pipeline(self, pipeline_id: str) -> knowledge_pb2.Pipeline | None:
        return self.pipelines_by_id.get(pipeline_id)

    def tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        return list(self.tools_by_name.values())

    def tool(self, name: str) -> knowledge_pb2.KnowledgeTool | None:
        return self.tools_by_name.get(name)

    async def create_document(self, document: knowledge_pb2.Document) -> None:
        _refuse_taken(self.documents_by_id, document.id)
        self.documents_by_id[document.id] = document

    async def delete_document(self, document_id: str) -> None:
        self.documents_by_id.pop(document_id, None)

    async def put_pipeline(self, pipeline: knowledge_pb2.Pipeline, *, create: bool) -> None:
        if create:
            _refuse_taken(self.pipelines_by_id, pipeline.id)
        self.pipelines_by_id[pipeline.id] = pipeline

    async def delete_pipeline(self, pipeline_id: str) -> None:
        self.pipelines_by_id.pop(pipeline_id, None)

    async def create_tool(self, tool: knowledge_pb2.KnowledgeTool) -> None:
        _refuse_taken(self.tools_by_name, tool.name)
        self.tools_by_name[tool.name] = tool

    async def delete_tool(self, name: str) -> None:
        self.tools_by_name.pop(name, None)


def _refuse_taken(items: dict[str, object], key: str) -> None:
    if key in items:
        raise AlreadyExists(f"'{key}' exists")


@dataclass
class MemoryOriginals:
    """Originals by key. A put waits for `gate` when one is set (an upload still under way), and `fail` makes it
    fail as NATS that went away does; `completed` lists the keys whose put ran to its end."""

    data: dict[str, bytes] = field(default_factory=dict)
    gate: anyio.Event | None = None
    fail: bool = False
    completed: list[str] = field(default_factory=list)

    async def put(self, key: str, data: bytes, *, description: str) -> None:
        if self.gate is not None:
            await self.gate.wait()
        await anyio.lowlevel.checkpoint()  # where a cancellation would cut an upload short
        if self.fail:
            raise StoreUnavailable("NATS did not answer (TimeoutError); try again shortly")
        self.data[key] = data
        self.completed.append(key)

    async def get(self, key: str) -> bytes:
        if key not in self.data:
            raise NotFound(f"the original of ingest {key} is missing")
        return self.data[key]

    async def delete(self, key: str) -> None:
        self.data.pop(key, None)


@dataclass
class MemoryIndex:
    """Chunks by ingest id, ranked by the dot product of the query's vector with each chunk's (lexical or dense).

    `fail_at` makes the add of that many chunks in one ingest fail as a store that went away does.
    """

    chunks: dict[str, list[IndexedChunk]] = field(default_factory=dict)
    fail_at: int | None = None

    async def add(self, ingest_id: str, document_id: str, chunks: Sequence[IndexedChunk]) -> None:
        held = self.chunks.setdefault(ingest_id, [])
        held.extend(chunks)
        if self.fail_at is not None and len(held) >= self.fail_at:
            raise StoreUnavailable("the index did not answer; try again shortly")

    async def remove(self, ingest_id: str) -> None:
        self.chunks.pop(ingest_id, None)

    async def count(self, ingest_id: str | None = None) -> int:
        if ingest_id is not None:
            return len(self.chunks.get(ingest_id, []))
        return sum(len(held) for held in self.chunks.values())

    async def search(self, query: sparse.SparseVector, ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        weights = query.as_dict()
        return self._ranked(ingest_ids, limit, lambda item: sum(weights.get(i, 0.0) * v for i, v in _pairs(item)))

    async def search_dense(self, query: list[float], ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        return self._ranked(ingest_ids, limit, lambda item: _dot(query, item.dense) if item.dense else 0.0)

    def describe(self) -> str:
        return "memory"

    def _ranked(self, ingest_ids: Sequence[str], limit: int, score: Callable[[IndexedChunk], float]) -> list[Hit]:
        hits = [
            Hit(
                ingest_id,
                item.chunk.index,
                item.chunk.start,
                item.chunk.end,
                item.chunk.page,
                score(item),
                item.chunk.text,
            )
            for ingest_id in ingest_ids
            for item in self.chunks.get(ingest_id, [])
        ]
        return sorted((hit for hit in hits if hit.score > 0), key=lambda hit: -hit.score)[:limit]


def _dot(left: Sequence[float], right: Sequence[float]) -> float:
    return sum(a * b for a, b in zip(left, right, strict=True))


def _pairs(item: IndexedChunk) -> zip[tuple[int, float]]:
    return zip(item.vector.indices, item.vector.values, strict=True)


@dataclass
class TableFetcher:
    """Pages by URL; a URL in `refused` is refused as the network guard refuses a private address."""

    pages: dict[str, Fetched] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)

    async def fetch(self, url: str, max_bytes: int, secrets: Sequence[Binding] = ()) -> Fetched:
        if url in self.refused:
            raise Refused("the URL was refused by the network guard: it resolves to a private address.")
        if url not in self.pages:
            raise NotFound(f"'{url}' answered HTTP 404; check the URL")
        return self.pages[url]


@dataclass(frozen=True)
class Faked(Rules):
    """The knowledge rules over the fakes, and the fakes to look into."""

    catalog: MemoryCatalog
    originals: MemoryOriginals
    index: MemoryIndex
    fetcher: TableFetcher


def rules(
    root: Path, *, max_bytes: int = MAX_BYTES, fetcher: Fetcher | None = None, secrets: SecretSource | None = None
) -> Faked:
    """The rules wired as `saip.knowledge.server.lifespan` wires them; `root` is the one ingest root. `fetcher`
    replaces the table of pages (the real guarded fetcher, for one)."""
    catalog, originals, index, table = MemoryCatalog(), MemoryOriginals(), MemoryIndex(), TableFetcher()
    knowledge = Knowledge(
        catalog=catalog,
        originals=originals,
        index=index,
        fetcher=fetcher or table,
        roots=[root],
        max_bytes=max_bytes,
        secrets=secrets,
    )
    return Faked(**vars(Rules.over(knowledge)), catalog=catalog, originals=originals, index=index, fetcher=table)
