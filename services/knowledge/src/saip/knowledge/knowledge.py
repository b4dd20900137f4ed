"""The knowledge rules: ingest (path, URL, text) without half-written state, documents, pipelines, search, tool
suggestions and the published knowledge tools. Collaborators (catalog, originals, index, fetcher) are passed in.

An ingest reads and parses first, then stores the original and the chunks under a fresh ingest id, and commits by
creating the catalog record; until that record exists nothing is searchable (search only looks at the ingest ids
the catalog knows), and any failure or cancellation before it removes what was stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import urlsplit

from google.protobuf.timestamp_pb2 import Timestamp

from saip.knowledge import chunking, paths, readers, sparse, suggest
from saip.knowledge.config import DEFAULT_THRESHOLD, DEFAULT_TOP_K, MAX_TOP_K, DeclaredDocument, DeclaredPipeline
from saip.knowledge.errors import AlreadyExists, InvalidRequest, KnowledgeError, NotFound, Refused
from saip.v1 import common_pb2, knowledge_pb2

if TYPE_CHECKING:
    from saip.knowledge.points import SnapshotManifest

logger = logging.getLogger(__name__)

DEFAULT_PIPELINE = "All documents (simple)"
DOCUMENTS_KEY = "knowledge.documents"
PIPELINES_KEY = "knowledge.pipelines"
SOURCE = "knowledge"
BATCH = 256  # chunks encoded and indexed per step (one progress report each)
FUSED = 4  # with the dense encoder, each ranking brings this many times the passages asked for before fusion
RRF_K = 60  # the usual reciprocal rank fusion constant
MAX_QUERY = 2000
MAX_DESCRIPTION = 1024
MAX_NAME = 200
RESERVED = (
    "'{name}' starts with 'saip_', which is reserved for this app's own management tools; choose another tool name"
)

Progress = Callable[[int, int, str], Awaitable[None]]
SourceKind = Literal["path", "url", "text"]


async def no_progress(done: int, total: int, message: str) -> None:
    """The progress sink of a caller that did not ask for progress."""


@dataclass(frozen=True)
class IndexedChunk:
    chunk: chunking.Chunk
    vector: sparse.SparseVector
    dense: list[float] | None = None


@dataclass(frozen=True)
class Hit:
    ingest_id: str
    position: int
    start: int
    end: int
    page: int
    score: float
    text: str


@dataclass(frozen=True)
class Fetched:
    body: bytes
    content_type: str
    url: str


class Catalog(Protocol):
    """The saip-knowledge bucket, read from a snapshot kept current by a watch; writes go to the bucket."""

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
    """The object store keeping each document's original bytes, keyed by ingest id."""

    async def put(self, key: str, data: bytes, *, description: str) -> None: ...
    async def get(self, key: str) -> bytes: ...
    async def delete(self, key: str) -> None: ...


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
    """The optional dense encoder (saip.knowledge.dense.DenseEncoder)."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> list[list[float]]: ...


class Fetcher(Protocol):
    async def fetch(self, url: str, max_bytes: int) -> Fetched: ...


@dataclass(frozen=True)
class Loaded:
    """A source's bytes and what is known about them before parsing."""

    data: bytes
    media_type: str
    default_name: str
    kind: SourceKind
    source: str


@dataclass(frozen=True)
class SearchResult:
    hits: list[tuple[Hit, knowledge_pb2.Document, float]]  # hit, its document, relevance
    pipeline: knowledge_pb2.Pipeline
    dropped: int


def slug(name: str) -> str:
    """The id of a name: lower case letters, digits and dashes (two names with one slug are one name)."""
    value = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:64].strip("-")
    if not value:
        raise InvalidRequest(f"'{name}' has no letters or digits; choose a name with some")
    return value


def now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def default_pipeline() -> knowledge_pb2.Pipeline:
    return knowledge_pb2.Pipeline(
        id=slug(DEFAULT_PIPELINE), name=DEFAULT_PIPELINE, top_k=DEFAULT_TOP_K, threshold=DEFAULT_THRESHOLD, rerank=True
    )


def _names(items: Sequence[str]) -> str:
    return ", ".join(f"'{item}'" for item in items) if items else "none yet"


class Knowledge:
    def __init__(
        self,
        *,
        catalog: Catalog,
        originals: Originals,
        index: Index,
        fetcher: Fetcher,
        roots: Sequence[Path],
        max_bytes: int,
        dense: Dense | None = None,
    ) -> None:
        self.catalog = catalog
        self._originals = originals
        self._index = index
        self._fetcher = fetcher
        self.roots = list(roots)
        self.max_bytes = max_bytes
        self._dense = dense

    @property
    def encoder(self) -> str:
        return f"{sparse.NAME} + {self._dense.name} (RRF)" if self._dense else sparse.NAME

    # --- documents -------------------------------------------------------------------------------------------

    async def load(self, kind: SourceKind, value: str) -> Loaded:
        """Read a source's bytes under the rules of its kind (path rules, the URL guard, the size cap)."""
        if kind == "path":
            return await asyncio.to_thread(self._load_path, value)
        if kind == "url":
            parts = urlsplit(value.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise InvalidRequest(f"'{value}' is not an http(s) URL; give a full URL such as https://host/page")
            fetched = await self._fetcher.fetch(value.strip(), self.max_bytes)
            final = urlsplit(fetched.url)
            media_type = readers.media_type_of_response(fetched.content_type, final.path)
            default = PurePosixPath(final.path).name or final.hostname or "page"
            return Loaded(fetched.body, media_type, default, "url", value.strip())
        if not value.strip():
            raise InvalidRequest("the text is empty; send the text to ingest, or a path or URL instead")
        data = value.encode("utf-8")
        if len(data) > self.max_bytes:
            raise InvalidRequest(
                f"the text is {len(data)} bytes, more than the ingest limit of {self.max_bytes} bytes "
                "(knowledge.max-document-bytes); send it in parts"
            )
        return Loaded(data, readers.MARKDOWN, f"text-{hashlib.sha256(data).hexdigest()[:8]}", "text", "text")

    def _load_path(self, value: str) -> Loaded:
        path = paths.resolve(value, self.roots)
        media_type = readers.media_type_of_name(path.name)
        return Loaded(paths.read_capped(path, self.max_bytes), media_type, path.name, "path", str(path))

    async def ingest(
        self, kind: SourceKind, value: str, name: str = "", *, progress: Progress = no_progress, managed_by: str = ""
    ) -> tuple[knowledge_pb2.Document, bool]:
        """Ingest one document; returns it and whether this first document created the default pipeline."""
        loaded = await self.load(kind, value)
        return await self.ingest_loaded(loaded, name, progress=progress, managed_by=managed_by)

    async def ingest_loaded(
        self, loaded: Loaded, name: str = "", *, progress: Progress = no_progress, managed_by: str = ""
    ) -> tuple[knowledge_pb2.Document, bool]:
        name = (name or loaded.default_name).strip()
        if len(name) > MAX_NAME:
            raise InvalidRequest(f"the name is {len(name)} characters; use at most {MAX_NAME}")
        document_id = slug(name)
        existing = self.catalog.document(document_id)
        if existing is not None:
            raise AlreadyExists(
                f"a document named '{existing.name}' exists; delete it first (saip_knowledge_delete_document) "
                "or ingest under another name"
            )
        digest = hashlib.sha256(loaded.data).hexdigest()
        twin = next((doc for doc in self.catalog.documents() if doc.sha256 == digest), None)
        if twin is not None:
            raise AlreadyExists(f"this content is already ingested as '{twin.name}'; search that document instead")
        first = not self.catalog.documents()
        parsed = await asyncio.to_thread(readers.read, loaded.data, loaded.media_type, name)
        chunks = await asyncio.to_thread(chunking.chunk, parsed.text, paged=loaded.media_type == readers.PDF)
        keywords = await asyncio.to_thread(sparse.keywords, parsed.text)
        total = len(chunks)
        await progress(0, total, f"'{name}' read: {total} chunks to index")
        ingest_id = uuid.uuid4().hex
        document = knowledge_pb2.Document(
            id=document_id,
            name=name,
            source_kind=loaded.kind,
            source=loaded.source,
            media_type=loaded.media_type,
            size_bytes=len(loaded.data),
            sha256=digest,
            chunks=total,
            created_at=now(),
            managed_by=managed_by,
            title=parsed.title[:200],
            keywords=keywords,
            pages=parsed.pages,
            ingest_id=ingest_id,
        )
        try:
            await self._originals.put(ingest_id, loaded.data, description=f"{name} ({loaded.media_type})")
            async for done in self._index_chunks(ingest_id, document_id, chunks):
                await progress(done, total, f"'{name}': {done} of {total} chunks indexed")
            await self.catalog.create_document(document)
        except BaseException:
            await asyncio.shield(self._discard(ingest_id))
            raise
        created = await self._ensure_default_pipeline() if first else False
        logger.info(
            "document ingested",
            extra={"document": document_id, "kind": loaded.kind, "chunks": total, "bytes": len(loaded.data)},
        )
        return document, created

    async def _index_chunks(
        self, ingest_id: str, document_id: str, chunks: Sequence[chunking.Chunk]
    ) -> AsyncIterator[int]:
        """Encode and index the chunks batch by batch, yielding how many are indexed after each batch."""
        for first in range(0, len(chunks), BATCH):
            batch = chunks[first : first + BATCH]
            vectors = await asyncio.to_thread(_encode, batch)
            dense: Sequence[list[float] | None] = [None] * len(batch)
            if self._dense is not None:
                dense = await asyncio.to_thread(self._dense.encode, [chunk.text for chunk in batch])
            items = [IndexedChunk(c, v, d) for c, v, d in zip(batch, vectors, dense, strict=True)]
            await self._index.add(ingest_id, document_id, items)
            yield first + len(batch)

    async def reindex(self) -> list[str]:
        """Index again, from their stored originals, the documents whose chunks the vector store does not hold in
        full: a new Qdrant server, a lost local folder, a changed encoder or engine. Returns the names re-indexed."""
        done = []
        missing = [d for d in self.documents() if await self._index.count(d.ingest_id) != d.chunks]
        if missing:
            logger.info(
                "re-indexing documents from their originals",
                extra={"documents": len(missing), "chunks": sum(d.chunks for d in missing)},
            )
        for number, document in enumerate(missing, start=1):
            try:
                data = await self._originals.get(document.ingest_id)
                parsed = await asyncio.to_thread(readers.read, data, document.media_type, document.name)
            except KnowledgeError as exc:
                logger.error(
                    "document not re-indexed; delete it and ingest it again",
                    extra={"document": document.id, "error": str(exc)},
                )
                continue
            chunks = await asyncio.to_thread(chunking.chunk, parsed.text, paged=document.media_type == readers.PDF)
            await self._index.remove(document.ingest_id)
            async for _ in self._index_chunks(document.ingest_id, document.id, chunks):
                pass
            done.append(document.name)
            logger.info(
                "document re-indexed",
                extra={"document": document.id, "chunks": len(chunks), "done": number, "of": len(missing)},
            )
        return done

    async def _discard(self, ingest_id: str) -> None:
        """Remove what a failed ingest stored; a failure here is logged (its chunks are unreachable anyway)."""
        for step in (self._index.remove, self._originals.delete):
            try:
                await step(ingest_id)
            except Exception:
                logger.exception("cleanup after a failed ingest did not finish", extra={"ingest_id": ingest_id})

    async def _ensure_default_pipeline(self) -> bool:
        if self.catalog.pipeline(slug(DEFAULT_PIPELINE)) is not None:
            return False
        pipeline = default_pipeline()
        pipeline.updated_at.CopyFrom(now())
        try:
            await self.catalog.put_pipeline(pipeline, create=True)
        except AlreadyExists:  # another replica created it first
            return False
        return True

    def documents(self) -> list[knowledge_pb2.Document]:
        return sorted(self.catalog.documents(), key=lambda doc: doc.name.casefold())

    def document_named(self, name: str) -> knowledge_pb2.Document:
        found = self.catalog.document(slug(name)) if name.strip() else None
        if found is None:
            raise NotFound(
                f"no document named '{name}'; the documents are {_names([d.name for d in self.documents()])}"
            )
        return found

    async def delete_document(self, name: str, *, force: bool = False) -> tuple[knowledge_pb2.Document, int]:
        """Remove the chunks, the original, then the record; `force` is configuration's own reconciliation."""
        document = self.document_named(name)
        if document.managed_by and not force:
            raise Refused(
                f"'{document.name}' is managed by configuration; remove or change it under {document.managed_by} "
                "in saip.yaml instead"
            )
        users = [p.name for p in self.catalog.pipelines() if document.id in p.document_ids]
        if users and not force:
            raise Refused(
                f"'{document.name}' is in the scope of the pipeline(s) {_names(users)}; apply them without it "
                "(saip_knowledge_apply_pipeline) or delete them first"
            )
        chunks = await self._index.count(document.ingest_id)
        await self._index.remove(document.ingest_id)
        await self._originals.delete(document.ingest_id)
        await self.catalog.delete_document(document.id)
        logger.info("document deleted", extra={"document": document.id, "chunks": chunks})
        return document, chunks

    # --- pipelines -------------------------------------------------------------------------------------------

    def pipelines(self) -> list[knowledge_pb2.Pipeline]:
        return [self.shown(p) for p in sorted(self.catalog.pipelines(), key=lambda p: p.name.casefold())]

    def shown(self, pipeline: knowledge_pb2.Pipeline) -> knowledge_pb2.Pipeline:
        """A copy with the scope's document names filled in (a deleted document shows as its id)."""
        copy = knowledge_pb2.Pipeline()
        copy.CopyFrom(pipeline)
        del copy.document_names[:]
        for document_id in pipeline.document_ids:
            document = self.catalog.document(document_id)
            copy.document_names.append(document.name if document else document_id)
        return copy

    def pipeline_named(self, name: str) -> knowledge_pb2.Pipeline:
        found = self.catalog.pipeline(slug(name)) if name.strip() else None
        if found is None:
            raise NotFound(
                f"no pipeline named '{name}'; the pipelines are {_names([p.name for p in self.pipelines()])}"
            )
        return found

    async def apply_pipeline(
        self,
        name: str,
        documents: Sequence[str],
        *,
        top_k: int | None = None,
        threshold: float | None = None,
        rerank: bool | None = None,
        managed_by: str = "",
    ) -> tuple[knowledge_pb2.Pipeline, bool]:
        """Create or update a pipeline; settings not given keep their current (or default) value."""
        name = name.strip()
        if not name or len(name) > MAX_NAME:
            raise InvalidRequest(f"a pipeline needs a name of 1 to {MAX_NAME} characters")
        existing = self.catalog.pipeline(slug(name))
        if existing is not None and existing.managed_by and not managed_by:
            raise Refused(
                f"'{existing.name}' is managed by configuration; change it under {existing.managed_by} in saip.yaml "
                "instead"
            )
        if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"topK must be between 1 and {MAX_TOP_K}, not {top_k}")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InvalidRequest(f"threshold must be between 0 and 1, not {threshold}")
        ids: list[str] = []
        missing: list[str] = []
        for document_name in documents:
            found = self.catalog.document(slug(document_name)) if document_name.strip() else None
            if found is None:
                missing.append(document_name)
            elif found.id not in ids:
                ids.append(found.id)
        if missing:
            raise NotFound(
                f"no document named {_names(missing)}; a pipeline scopes existing documents: "
                f"{_names([d.name for d in self.documents()])} (an empty list means every document)"
            )
        base = existing or default_pipeline()
        pipeline = knowledge_pb2.Pipeline(
            id=slug(name),
            name=existing.name if existing else name,
            document_ids=ids,
            top_k=top_k if top_k is not None else base.top_k,
            threshold=threshold if threshold is not None else base.threshold,
            rerank=rerank if rerank is not None else base.rerank,
            managed_by=managed_by,
            updated_at=now(),
        )
        await self.catalog.put_pipeline(pipeline, create=existing is None)
        return self.shown(pipeline), existing is None

    async def delete_pipeline(self, name: str, *, force: bool = False) -> knowledge_pb2.Pipeline:
        pipeline = self.pipeline_named(name)
        if pipeline.managed_by and not force:
            raise Refused(
                f"'{pipeline.name}' is managed by configuration; remove it from {pipeline.managed_by} in saip.yaml "
                "instead"
            )
        tools = [t.name for t in self.catalog.tools() if t.pipeline_id == pipeline.id]
        if tools:
            raise Refused(
                f"the knowledge tool(s) {_names(tools)} search '{pipeline.name}'; unpublish them first "
                "(saip_knowledge_unpublish_tool)"
            )
        await self.catalog.delete_pipeline(pipeline.id)
        return self.shown(pipeline)

    # --- search ----------------------------------------------------------------------------------------------

    def scope(self, pipeline: knowledge_pb2.Pipeline) -> list[knowledge_pb2.Document]:
        """The pipeline's documents; refuses a scope that names a document that is gone."""
        if not pipeline.document_ids:
            return self.documents()
        found = [(document_id, self.catalog.document(document_id)) for document_id in pipeline.document_ids]
        gone = [document_id for document_id, document in found if document is None]
        if gone:
            raise Refused(
                f"the pipeline '{pipeline.name}' scopes {_names(gone)}, which no longer exist; apply it again without "
                "them (saip_knowledge_apply_pipeline)"
            )
        return [document for _, document in found if document is not None]

    async def search(self, pipeline_name: str, query: str, top_k: int | None = None) -> SearchResult:
        query = query.strip()
        if not query:
            raise InvalidRequest("the query is empty; ask a question or give keywords")
        if len(query) > MAX_QUERY:
            raise InvalidRequest(f"the query is {len(query)} characters; use at most {MAX_QUERY}")
        if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"topK must be between 1 and {MAX_TOP_K}, not {top_k}")
        pipeline = self.pipeline_named(pipeline_name) if pipeline_name.strip() else default_pipeline()
        documents = {document.ingest_id: document for document in self.scope(pipeline)}
        vector = sparse.encode_query(query)
        dense = await asyncio.to_thread(self._dense.encode, [query]) if self._dense is not None else None
        if not vector and dense is None:
            raise InvalidRequest(
                "the query has no searchable words (only stop words, punctuation or single letters); "
                "use the words the documents would contain"
            )
        if not documents:
            return SearchResult([], self.shown(pipeline), 0)
        limit = top_k or pipeline.top_k
        wanted = limit if dense is None else limit * FUSED
        lexical = await self._index.search(vector, list(documents), wanted) if vector else []
        # Neither BM25 sums nor one model's cosines have a scale that means the same for every query and corpus, so a
        # passage's relevance is its score relative to the best of the same query in that ranking; a passage found
        # by both rankings keeps the better one.
        relevance = _relative(lexical)
        if dense is None:
            ranked = lexical
        else:
            semantic = await self._index.search_dense(dense[0], list(documents), wanted)
            for key, value in _relative(semantic).items():
                relevance[key] = max(relevance.get(key, 0.0), value)
            ranked = fuse(lexical, semantic)[:limit]
        kept = [(hit, documents[hit.ingest_id], relevance[(hit.ingest_id, hit.position)]) for hit in ranked]
        above = [entry for entry in kept if entry[2] >= pipeline.threshold]
        if pipeline.rerank:
            above.sort(key=lambda entry: -entry[0].score)
        else:
            order = {ingest_id: rank for rank, ingest_id in enumerate(documents)}
            above.sort(key=lambda entry: (order[entry[0].ingest_id], entry[0].position))
        return SearchResult(above, self.shown(pipeline), len(ranked) - len(above))

    # --- knowledge tools -------------------------------------------------------------------------------------

    def suggest_tools(self, pipeline_name: str = "") -> list[suggest.Suggestion]:
        pipelines = [self.pipeline_named(pipeline_name)] if pipeline_name.strip() else self.catalog.pipelines()
        taken = {tool.name for tool in self.catalog.tools()}
        suggestions = []
        for pipeline in sorted(pipelines, key=lambda p: p.name.casefold()):
            try:
                documents = self.scope(pipeline)
            except Refused:
                if pipeline_name.strip():
                    raise
                continue  # a pipeline with a dangling scope is reported when it is searched, not suggested
            if not documents:
                continue
            found = suggest.suggest(pipeline, documents, self.catalog.tools(), taken)
            taken.add(found.name)
            suggestions.append(found)
        return suggestions

    def tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        shown = []
        for tool in sorted(self.catalog.tools(), key=lambda t: t.name):
            copy = knowledge_pb2.KnowledgeTool()
            copy.CopyFrom(tool)
            pipeline = self.catalog.pipeline(tool.pipeline_id)
            copy.pipeline_name = pipeline.name if pipeline else tool.pipeline_id
            shown.append(copy)
        return shown

    async def publish_tool(self, name: str, description: str, pipeline_name: str) -> knowledge_pb2.KnowledgeTool:
        name, description = name.strip(), description.strip()
        if name.startswith(suggest.RESERVED_PREFIX):
            raise Refused(RESERVED.format(name=name))
        if not suggest.TOOL_NAME.match(name):
            raise InvalidRequest(
                f"'{name}' is not a valid tool name; use 1 to 64 letters, digits, '_' or '-', starting with a letter"
            )
        if not description or len(description) > MAX_DESCRIPTION:
            raise InvalidRequest(
                f"a knowledge tool needs a description of 1 to {MAX_DESCRIPTION} characters that tells an AI when "
                "to use it (saip_knowledge_suggest_tools writes one from the documents)"
            )
        pipeline = self.pipeline_named(pipeline_name)
        self.scope(pipeline)  # refuses a pipeline over a deleted document
        existing = self.catalog.tool(name)
        if existing is not None:
            raise AlreadyExists(
                f"the knowledge tool '{name}' is already published; unpublish it first "
                "(saip_knowledge_unpublish_tool) or choose another name"
            )
        tool = knowledge_pb2.KnowledgeTool(
            name=name, description=description, pipeline_id=pipeline.id, published_at=now()
        )
        await self.catalog.create_tool(tool)
        tool.pipeline_name = pipeline.name
        logger.info("knowledge tool published", extra={"tool": name, "pipeline": pipeline.id})
        return tool

    async def unpublish_tool(self, name: str) -> knowledge_pb2.KnowledgeTool:
        tool = self.catalog.tool(name.strip())
        if tool is None:
            raise NotFound(
                f"no knowledge tool named '{name}'; the published ones are "
                f"{_names([t.name for t in self.catalog.tools()])}"
            )
        await self.catalog.delete_tool(tool.name)
        logger.info("knowledge tool unpublished", extra={"tool": tool.name})
        return tool

    def served_tools(self) -> list[common_pb2.ServedTool]:
        return [
            common_pb2.ServedTool(
                name=tool.name,
                title=f"Search {tool.pipeline_name}",
                description=tool.description,
                input_schema_json=json.dumps(TOOL_INPUT_SCHEMA),
                read_only=True,
                idempotent=True,
                source=SOURCE,
            )
            for tool in self.tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call of a published knowledge tool: the search of its pipeline. Bad arguments raise InvalidRequest."""
        tool = self.catalog.tool(name)
        if tool is None:
            raise NotFound(f"no knowledge tool named '{name}' is published")
        unknown = sorted(set(arguments) - {"query", "topK"})
        if unknown:
            raise InvalidRequest(f"unknown argument(s) {unknown}; '{name}' takes `query` and optionally `topK`")
        query, top_k = arguments.get("query"), arguments.get("topK")
        if not isinstance(query, str):
            raise InvalidRequest(f"'{name}' needs `query`, a string: the question or keywords to search for")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
            raise InvalidRequest(f"`topK` must be an integer between 1 and {MAX_TOP_K}")
        pipeline = self.catalog.pipeline(tool.pipeline_id)
        if pipeline is None:
            raise Refused(f"the pipeline behind '{name}' is gone; ask the person to unpublish the tool")
        found = await self.search(pipeline.name, query, top_k)
        return {
            "tool": name,
            "query": query.strip(),
            "results": [hit_json(hit, document, relevance) for hit, document, relevance in found.hits],
        }

    # --- configuration -----------------------------------------------------------------------------------------

    async def apply_configuration(
        self, documents: Sequence[DeclaredDocument], pipelines: Sequence[DeclaredPipeline]
    ) -> list[str]:
        """Bring the declared documents and pipelines in: configuration wins. Returns the problems (also logged)."""
        problems: list[str] = []
        declared_docs = {slug(d.name) for d in documents}
        declared_pipes = {slug(p.name) for p in pipelines}
        for pipeline in self.catalog.pipelines():
            if pipeline.managed_by == PIPELINES_KEY and pipeline.id not in declared_pipes:
                await self._attempt(problems, pipeline.name, self.delete_pipeline(pipeline.name, force=True))
        for document in self.catalog.documents():
            if document.managed_by == DOCUMENTS_KEY and document.id not in declared_docs:
                await self._attempt(problems, document.name, self.delete_document(document.name, force=True))
        for declared in documents:
            await self._attempt(problems, declared.name, self._declare_document(declared))
        for declared_pipeline in pipelines:
            await self._attempt(
                problems,
                declared_pipeline.name,
                self.apply_pipeline(
                    declared_pipeline.name,
                    declared_pipeline.documents,
                    top_k=declared_pipeline.top_k,
                    threshold=declared_pipeline.threshold,
                    rerank=declared_pipeline.rerank,
                    managed_by=PIPELINES_KEY,
                ),
            )
        return problems

    async def _declare_document(self, declared: DeclaredDocument) -> None:
        kind: SourceKind = "path" if declared.path is not None else "url" if declared.url is not None else "text"
        loaded = await self.load(kind, declared.path or declared.url or declared.text or "")
        existing = self.catalog.document(slug(declared.name))
        if existing is not None:
            same = existing.sha256 == hashlib.sha256(loaded.data).hexdigest()
            if same and existing.managed_by == DOCUMENTS_KEY:
                return
            await self.delete_document(existing.name, force=True)
        await self.ingest_loaded(loaded, declared.name, managed_by=DOCUMENTS_KEY)

    @staticmethod
    async def _attempt(problems: list[str], name: str, step: Awaitable[object]) -> None:
        try:
            await step
        except KnowledgeError as exc:
            problems.append(f"{name}: {exc}")
            logger.error("configured knowledge item not applied", extra={"item": name, "error": str(exc)})

    # --- status ------------------------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        return {
            "documents": len(self.catalog.documents()),
            "chunks": await self._index.count(),
            "pipelines": len(self.catalog.pipelines()),
            "vector_store": self._index.describe(),
            "ingest_roots": [str(root) for root in self.roots],
            "encoder": self.encoder,
            "max_document_bytes": self.max_bytes,
        }


TOOL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "The question or keywords to search for."},
        "topK": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOP_K,
            "description": "How many passages at most (the pipeline's topK when omitted).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _relative(ranking: Sequence[Hit]) -> dict[tuple[str, int], float]:
    best = ranking[0].score if ranking else 0.0
    if best <= 0:
        return {}
    return {(hit.ingest_id, hit.position): max(hit.score, 0.0) / best for hit in ranking}


def fuse(*rankings: Sequence[Hit]) -> list[Hit]:
    """Reciprocal rank fusion: each ranking gives a chunk 1 / (RRF_K + rank); the sums, best first, are the scores."""
    scores: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.ingest_id, hit.position)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: -scores[key])
    return [replace(first[key], score=scores[key]) for key in ordered]


def _encode(chunks: Sequence[chunking.Chunk]) -> list[sparse.SparseVector]:
    return [sparse.encode_document(chunk.text) for chunk in chunks]


def hit_json(hit: Hit, document: knowledge_pb2.Document, relevance: float) -> dict[str, Any]:
    return {
        "document": document.name,
        "source": document.source,
        "position": hit.position,
        "start": hit.start,
        "end": hit.end,
        "page": hit.page or None,
        "score": round(hit.score, 4),
        "relevance": round(relevance, 4),
        "text": hit.text,
    }
