"""The knowledge of the service: its documents. An ingest (path, URL or text) never leaves half-written state, a
delete removes everything of a document, and a re-index rebuilds the index from the stored originals.

An ingest reads and parses first, then stores the original and the chunks (at once) under a fresh ingest id, and
commits by creating the catalog record; until that record exists nothing is searchable (search only looks at the
ingest ids the catalog knows), and any failure or cancellation before it removes what was stored. Pipelines, search,
the knowledge tools and the declared configuration build on it (`pipelines`, `search`, `published`, `declared`).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

from saip.common import concurrently, literals
from saip.common.netguard import Binding
from saip.common.secret_source import SecretSource
from saip.common.timestamps import now
from saip.common.words import plural
from saip.knowledge import chunking, paths, readers, sparse
from saip.knowledge.config import SECRETS_KEY
from saip.knowledge.errors import AlreadyExists, InvalidRequest, KnowledgeError, NotFound, Refused
from saip.knowledge.items import (
    DEFAULT_PIPELINE,
    MAX_NAME,
    default_pipeline,
    expect,
    fingerprint,
    listed,
    readable,
    slug,
)
from saip.knowledge.ports import Catalog, Dense, Fetcher, Index, IndexedChunk, Originals
from saip.v1 import knowledge_pb2

logger = logging.getLogger(__name__)

BATCH = 256  # chunks encoded and indexed per step (one progress report each)

Progress = Callable[[int, int, str], Awaitable[None]]
SourceKind = Literal["path", "url", "text", "upload"]


async def no_progress(done: int, total: int, message: str) -> None:
    """The progress sink of a caller that did not ask for progress."""


@dataclass(frozen=True)
class Loaded:
    """A source's bytes and what is known about them before parsing."""

    data: bytes
    media_type: str
    default_name: str
    kind: SourceKind
    source: str


class Knowledge:
    """The documents over the catalog, the originals and the index; `roots` are where paths may be read from."""

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
        secrets: SecretSource | None = None,
    ) -> None:
        self.catalog = catalog
        self.index = index
        self.dense = dense
        self._originals = originals
        self._fetcher = fetcher
        self.roots = list(roots)
        self.max_bytes = max_bytes
        self.secrets = secrets if secrets is not None else SecretSource({}, SECRETS_KEY)

    @property
    def encoder(self) -> str:
        return f"{sparse.NAME} + {self.dense.name} (RRF)" if self.dense else sparse.NAME

    async def load(self, kind: SourceKind, value: str) -> Loaded:
        """Read a source's bytes under the rules of its kind (path rules, the URL guard, the size cap)."""
        if kind == "path":
            return await anyio.to_thread.run_sync(self._load_path, value)
        if kind == "url":
            parts = urlsplit(value.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise InvalidRequest(f"'{value}' is not an http(s) URL; give a full URL such as https://host/page")
            fetched = await self._fetcher.fetch(value.strip(), self.max_bytes, self._bindings(value.strip()))
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

    def uploaded(self, filename: str, data: bytes) -> Loaded:
        """A file the person sent (the console's upload): its bytes as they came, its kind from its name."""
        name = PurePosixPath(filename.replace("\\", "/")).name.strip()
        if not name:
            raise InvalidRequest("the upload has no file name; send the file's name (its extension says its kind)")
        media_type = readers.media_type_of_name(name)
        if not data:
            raise InvalidRequest(f"'{name}' is empty; send a file with something in it")
        if len(data) > self.max_bytes:
            raise InvalidRequest(
                f"'{name}' is {len(data)} bytes, more than the ingest limit of {self.max_bytes} bytes "
                "(knowledge.max-document-bytes)"
            )
        return Loaded(data, media_type, name, "upload", name)

    def _bindings(self, url: str) -> list[Binding]:
        """A URL's secrets: a literal one is refused; each `${NAME}` must be a secret of knowledge.secrets bound to
        the URL's host, and is resolved only in the request (the document keeps the URL as written)."""
        refused = literals.url_refusal(url, literals.KNOWLEDGE_SOURCE)
        if refused is not None:
            raise Refused(refused)
        names = sorted(set(literals.REFERENCE.findall(url)))
        missing = self.secrets.missing(names)
        if missing:
            raise Refused(self.secrets.unavailable(missing))
        host = urlsplit(url).hostname or ""
        bindings = [self.secrets.binding(name, "${" + name + "}") for name in names]
        for name, binding in zip(names, bindings, strict=True):
            if not binding.bound_to(host):
                raise Refused(
                    f"${{{name}}} may be sent only to {', '.join(binding.hosts)}, not to {host}; ask the person to "
                    f"bind it to {host} in {self.secrets.key} if that is where it belongs."
                )
        return bindings

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
        readable(name, "a document's")  # a file's own name too: the person gives another with the ingest's name
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
        parsed = await anyio.to_thread.run_sync(readers.read, loaded.data, loaded.media_type, name)
        chunks = await anyio.to_thread.run_sync(_chunk, parsed.text, loaded.media_type)
        total = len(chunks)
        await progress(0, total, f"'{name}' read: {plural(total, 'chunk')} to index")
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
            pages=parsed.pages,
            ingest_id=ingest_id,
        )
        tally: Counter[str] = Counter()  # the chunks' pieces, counted as they are encoded, for the keywords

        async def store_original() -> None:
            # Never cancelled half-way: the object store would keep the parts already sent with no record naming
            # them. A failure of the indexing waits for it, and the cleanup below removes it.
            with anyio.CancelScope(shield=True):
                await self._originals.put(ingest_id, loaded.data, description=f"{name} ({loaded.media_type})")

        async def index() -> None:
            async for done in self._index_chunks(ingest_id, document_id, chunks, tally):
                await progress(done, total, f"'{name}': {done} of {total} chunks indexed")

        try:
            # The original's upload waits mostly on NATS, one part after the other; the indexing, all CPU, runs
            # meanwhile.
            await concurrently.both(store_original, index)
            if chunking.apart(chunks):  # then the chunks' pieces are the text's
                document.keywords.extend(sparse.keywords_counted(tally))
            else:
                document.keywords.extend(await anyio.to_thread.run_sync(sparse.keywords, parsed.text))
            await self.catalog.create_document(document)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._discard(ingest_id)
            raise
        created = await self._ensure_default_pipeline() if first else False
        logger.info(
            "document ingested",
            extra={"document": document_id, "kind": loaded.kind, "chunks": total, "bytes": len(loaded.data)},
        )
        return document, created

    async def _index_chunks(
        self, ingest_id: str, document_id: str, chunks: Sequence[chunking.Chunk], tally: Counter[str] | None = None
    ) -> AsyncIterator[int]:
        """Encode and index the chunks batch by batch, yielding how many are indexed after each batch; `tally`, when
        given, counts the chunks' pieces of text (`sparse.encode_document`)."""
        for first in range(0, len(chunks), BATCH):
            batch = chunks[first : first + BATCH]
            vectors = await anyio.to_thread.run_sync(_encode, batch, tally)
            dense: Sequence[list[float] | None] = [None] * len(batch)
            if self.dense is not None:
                dense = await anyio.to_thread.run_sync(self.dense.encode, [chunk.text for chunk in batch])
            items = [IndexedChunk(c, v, d) for c, v, d in zip(batch, vectors, dense, strict=True)]
            await self.index.add(ingest_id, document_id, items)
            yield first + len(batch)

    async def reindex(self) -> list[str]:
        """Index again, from their stored originals, the documents whose chunks the vector store does not hold in
        full: a new Qdrant server, a lost local folder, a changed encoder or engine. Returns the names re-indexed."""
        done = []
        missing = [d for d in self.documents() if await self.index.count(d.ingest_id) != d.chunks]
        if missing:
            logger.info(
                "re-indexing documents from their originals",
                extra={"documents": len(missing), "chunks": sum(d.chunks for d in missing)},
            )
        for number, document in enumerate(missing, start=1):
            try:
                data = await self._originals.get(document.ingest_id)
                parsed = await anyio.to_thread.run_sync(readers.read, data, document.media_type, document.name)
            except KnowledgeError as exc:
                logger.error(
                    "document not re-indexed; delete it and ingest it again",
                    extra={"document": document.id, "error": str(exc)},
                )
                continue
            chunks = await anyio.to_thread.run_sync(_chunk, parsed.text, document.media_type)
            await self.index.remove(document.ingest_id)
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
        for step in (self.index.remove, self._originals.delete):
            try:
                await step(ingest_id)
            except Exception:
                logger.exception("cleanup after a failed ingest did not finish", extra={"ingest_id": ingest_id})

    async def _ensure_default_pipeline(self) -> bool:
        """The first document creates the default pipeline (unless it exists); says whether this call created it."""
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
                f"no document named '{name}'; the documents are {listed([d.name for d in self.documents()])}"
            )
        return found

    def described(self, name: str) -> knowledge_pb2.Document:
        """The named document with its fingerprint, what an approval of deleting it binds, and why a delete would be
        refused now."""
        found = self.document_named(name)
        document = knowledge_pb2.Document()
        document.CopyFrom(found)
        document.fingerprint = fingerprint(found)
        document.delete_refused = self.delete_refusal(found)
        return document

    def delete_refusal(self, document: knowledge_pb2.Document) -> str:
        """Why the AI or the person may not delete `document` now (configuration reconciles its own), or empty."""
        if document.managed_by:
            return (
                f"'{document.name}' is managed by configuration; remove or change it under {document.managed_by} "
                "in saip.yaml instead"
            )
        users = [p.name for p in self.catalog.pipelines() if document.id in p.document_ids]
        if users:
            return (
                f"'{document.name}' is in the scope of the pipeline(s) {listed(users)}; apply them without it "
                "(saip_knowledge_apply_pipeline) or delete them first"
            )
        return ""

    async def delete_document(
        self, name: str, *, force: bool = False, expected: str = ""
    ) -> tuple[knowledge_pb2.Document, int]:
        """Remove the chunks, the original, then the record; `force` is configuration's own reconciliation, and
        `expected` the fingerprint an approval described (another ingest under the name is refused)."""
        document = self.document_named(name)
        expect(f"the document '{document.name}'", expected, fingerprint(document), "saip_knowledge_list_documents")
        if not force and (refusal := self.delete_refusal(document)):
            raise Refused(refusal)
        chunks = await self.index.count(document.ingest_id)
        await self.index.remove(document.ingest_id)
        await self._originals.delete(document.ingest_id)
        await self.catalog.delete_document(document.id)
        logger.info("document deleted", extra={"document": document.id, "chunks": chunks})
        return document, chunks

    async def status(self) -> dict[str, Any]:
        return {
            "documents": len(self.catalog.documents()),
            "chunks": await self.index.count(),
            "pipelines": len(self.catalog.pipelines()),
            "vector_store": self.index.describe(),
            "ingest_roots": [str(root) for root in self.roots],
            "encoder": self.encoder,
            "max_document_bytes": self.max_bytes,
        }


def _encode(chunks: Sequence[chunking.Chunk], tally: Counter[str] | None) -> list[sparse.SparseVector]:
    return [sparse.encode_document(chunk.text, tally) for chunk in chunks]


def _chunk(text: str, media_type: str) -> list[chunking.Chunk]:
    return chunking.chunk(text, paged=media_type == readers.PDF)
