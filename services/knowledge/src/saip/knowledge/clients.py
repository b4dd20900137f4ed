"""The knowledge service's outbound side: the saip-knowledge bucket, the saip-documents object store, Qdrant, and
the guarded fetch for ingest by URL. Each turns its library's failures into the service's own errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import ObjectMeta, ObjectStoreConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyWrongLastSequenceError, NotFoundError, ObjectNotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue
from nats.js.object_store import ObjectStore
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from saip.common import bus, names
from saip.common.netguard import GuardBlocked, NetPolicy, NetworkMode, guarded_fetch
from saip.common.risk import SANDBOX_GUARD_BLOCKED, WARN, RiskPublisher
from saip.knowledge import edge, points, sparse
from saip.knowledge.errors import AlreadyExists, NotFound, Refused, StoreUnavailable
from saip.knowledge.knowledge import Fetched, Hit, IndexedChunk
from saip.knowledge.points import DENSE, VECTOR, SnapshotManifest, StoredPoint
from saip.v1 import knowledge_pb2

logger = logging.getLogger(__name__)

CATCH_UP_WITHIN = 5.0  # how long a write waits for the bucket watch to show it
_T = TypeVar("_T")

_KINDS: dict[str, type[Message]] = {
    "document": knowledge_pb2.Document,
    "pipeline": knowledge_pb2.Pipeline,
    "tool": knowledge_pb2.KnowledgeTool,
}


async def _nats(operation: Awaitable[_T]) -> _T:
    """NATS failures as StoreUnavailable; the answers callers act on (taken, not found) pass through."""
    try:
        return await operation
    except (KeyWrongLastSequenceError, BucketNotFoundError, ObjectNotFoundError, NotFoundError):
        raise
    except (NatsError, TimeoutError, OSError) as exc:
        raise StoreUnavailable(f"NATS did not answer ({type(exc).__name__}); try again shortly") from None


class KvCatalog:
    """The saip-knowledge bucket (keys document.<id>, pipeline.<id>, tool.<name>) and a snapshot of it.

    Reads come from the snapshot, which only the bucket's watch changes; every write waits until the watch has shown
    it, so a caller reads its own writes and every replica converges on the same state.
    """

    def __init__(self, js: JetStreamContext, kv: KeyValue) -> None:
        self._js = js
        self._kv = kv
        self._entries: dict[str, dict[str, Message]] = {kind: {} for kind in _KINDS}
        self._applied = 0
        self._moved = asyncio.Event()
        self._ready = asyncio.Event()
        self._restart = asyncio.Event()
        self.on_change: Callable[[], None] = lambda: None

    @classmethod
    async def open(cls, js: JetStreamContext) -> KvCatalog:
        kv = await _nats(bus.ensure_kv(js, names.KNOWLEDGE_BUCKET, history=5))
        return cls(js, kv)

    # reads --------------------------------------------------------------------------------------------------------

    def _all(self, kind: str) -> list[Any]:
        return list(self._entries[kind].values())

    def documents(self) -> list[knowledge_pb2.Document]:
        return self._all("document")

    def document(self, document_id: str) -> knowledge_pb2.Document | None:
        return self._entries["document"].get(document_id)  # type: ignore[return-value]

    def pipelines(self) -> list[knowledge_pb2.Pipeline]:
        return self._all("pipeline")

    def pipeline(self, pipeline_id: str) -> knowledge_pb2.Pipeline | None:
        return self._entries["pipeline"].get(pipeline_id)  # type: ignore[return-value]

    def tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        return self._all("tool")

    def tool(self, name: str) -> knowledge_pb2.KnowledgeTool | None:
        return self._entries["tool"].get(name)  # type: ignore[return-value]

    # writes -------------------------------------------------------------------------------------------------------

    async def _create(self, key: str, message: Message, taken: str) -> None:
        try:
            revision = await _nats(self._kv.create(key, message.SerializeToString()))
        except KeyWrongLastSequenceError:
            raise AlreadyExists(taken) from None
        await self._caught_up(revision)

    async def _put(self, key: str, message: Message) -> None:
        await self._caught_up(await _nats(self._kv.put(key, message.SerializeToString())))

    async def _delete(self, key: str) -> None:
        await _nats(self._kv.delete(key))
        await self.sync()  # a delete does not return its revision; the stream's last sequence covers it

    async def sync(self) -> None:
        """Wait until the snapshot shows every write made so far, by any replica (the gateway lists the served tools
        as soon as it sees a change, possibly before this replica's watch has applied it)."""
        info = await _nats(self._js.stream_info(f"KV_{names.KNOWLEDGE_BUCKET}"))
        await self._caught_up(info.state.last_seq)

    async def create_document(self, document: knowledge_pb2.Document) -> None:
        await self._create(f"document.{document.id}", document, f"a document named '{document.name}' exists")

    async def delete_document(self, document_id: str) -> None:
        await self._delete(f"document.{document_id}")

    async def put_pipeline(self, pipeline: knowledge_pb2.Pipeline, *, create: bool) -> None:
        key = f"pipeline.{pipeline.id}"
        if create:
            await self._create(key, pipeline, f"a pipeline named '{pipeline.name}' exists")
        else:
            await self._put(key, pipeline)

    async def delete_pipeline(self, pipeline_id: str) -> None:
        await self._delete(f"pipeline.{pipeline_id}")

    async def create_tool(self, tool: knowledge_pb2.KnowledgeTool) -> None:
        await self._create(f"tool.{tool.name}", tool, f"the knowledge tool '{tool.name}' is already published")

    async def delete_tool(self, name: str) -> None:
        await self._delete(f"tool.{name}")

    # the watch ----------------------------------------------------------------------------------------------------

    async def _caught_up(self, revision: int) -> None:
        try:
            async with asyncio.timeout(CATCH_UP_WITHIN):
                while self._applied < revision:
                    await self._moved.wait()
        except TimeoutError:
            raise StoreUnavailable("the knowledge catalog did not catch up with NATS in time; try again") from None

    def restart(self) -> None:
        """NATS reconnected: the watch may have missed changes, so read the bucket afresh."""
        self._restart.set()

    async def ready(self) -> None:
        await self._ready.wait()

    async def follow(self) -> None:
        """Keep the snapshot current, forever; each (re)start reads every key afresh, then follows the changes."""
        while True:
            self._restart = asyncio.Event()
            watching = asyncio.create_task(self._watch())
            restarting = asyncio.create_task(self._restart.wait())
            try:
                await asyncio.wait([watching, restarting], return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when follow itself is cancelled: the watch must not outlive it
                restarting.cancel()
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):  # its failure is read below
                    await watching
            if watching.done() and not watching.cancelled() and watching.exception() is not None:
                logger.warning("knowledge catalog watch failed; restarting", extra={"error": str(watching.exception())})
                await asyncio.sleep(1.0)

    async def _watch(self) -> None:
        # The current values are gathered apart and swapped in at once, so no reader sees half a catalog.
        fresh: dict[str, dict[str, Message]] = {kind: {} for kind in _KINDS}
        initial, seen = True, 0
        async with contextlib.aclosing(self._updates()) as updates:
            async for entry in updates:
                if entry is None:  # the end of the current values
                    if initial:
                        self._entries, initial = fresh, False
                        self._applied = max(self._applied, seen)
                        self._ready.set()
                        self._changed()
                    continue
                if initial:
                    self._apply(fresh, entry)
                    seen = max(seen, entry.revision or 0)
                else:
                    self._apply(self._entries, entry)
                    self._applied = max(self._applied, entry.revision or 0)
                    self._changed()

    async def _updates(self) -> AsyncGenerator[KeyValue.Entry | None, None]:
        watcher = await self._kv.watchall()
        try:
            async for entry in watcher:
                yield entry
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]

    def _apply(self, target: dict[str, dict[str, Message]], entry: KeyValue.Entry) -> None:
        kind, _, key = entry.key.partition(".")
        if kind not in _KINDS:
            return
        if entry.operation in (KV_DEL, KV_PURGE) or not entry.value:
            target[kind].pop(key, None)
            return
        try:
            target[kind][key] = _KINDS[kind].FromString(entry.value)
        except DecodeError:
            logger.error("unreadable knowledge record skipped", extra={"key": entry.key})

    def _changed(self) -> None:
        self._moved.set()
        self._moved = asyncio.Event()
        self.on_change()


class ObjectOriginals:
    """Each document's original bytes in the saip-documents object store, named by ingest id."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    @classmethod
    async def open(cls, js: JetStreamContext) -> ObjectOriginals:
        try:
            store = await _nats(js.object_store(names.DOCUMENTS_OBJECT_STORE))
        except BucketNotFoundError:
            store = await _nats(
                js.create_object_store(
                    names.DOCUMENTS_OBJECT_STORE,
                    ObjectStoreConfig(description="saip knowledge: original documents", storage=StorageType.FILE),
                )
            )
        return cls(store)

    async def put(self, key: str, data: bytes, *, description: str) -> None:
        await _nats(self._store.put(key, data, meta=ObjectMeta(name=key, description=description)))

    async def get(self, key: str) -> bytes:
        try:
            result = await _nats(self._store.get(key))
        except (ObjectNotFoundError, NotFoundError):
            raise NotFound(f"the original of ingest {key} is missing from {names.DOCUMENTS_OBJECT_STORE}") from None
        return bytes(result.data or b"")

    async def delete(self, key: str) -> None:
        with contextlib.suppress(ObjectNotFoundError, NotFoundError):  # already gone is what we want
            await _nats(self._store.delete(key))


def _vector(vector: sparse.SparseVector) -> models.SparseVector:
    # Sorted by index: qdrant-client's local mode scores stored vectors as if they were (a server sorts them itself).
    ordered = sorted(zip(vector.indices, vector.values, strict=True))
    return models.SparseVector(indices=[index for index, _ in ordered], values=[value for _, value in ordered])


def _vectors(item: IndexedChunk) -> dict[str, Any]:
    vectors: dict[str, Any] = {VECTOR: _vector(item.vector)}
    if item.dense is not None:
        vectors[DENSE] = item.dense
    return vectors


def _ingest_is(ingest_ids: Sequence[str]) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key=points.INGEST, match=models.MatchAny(any=list(ingest_ids)))])


# IDF over the live points of the whole collection, as Qdrant Edge scores (the engine's default would still count
# removed points until a segment is vacuumed).
_LIVE_IDF = models.SearchParams(idf=models.IdfCorpusParams(corpus=models.Filter()))


class _LocalLoop:
    """A thread with an event loop of its own, where Qdrant's local mode runs.

    Local mode is a pure-Python engine: its async client scans every point of a search without ever yielding, for
    about 0.1 ms a chunk. On the service's own loop that would stall every other call (gRPC health checks included)
    for the length of each search; here the scan holds only this thread, and its calls run one at a time, in order.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="qdrant-local", daemon=True)
        self._thread.start()

    async def run(self, operation: Awaitable[_T]) -> _T:
        async def awaited() -> _T:
            return await operation

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(awaited(), self._loop))

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


class QdrantIndex:
    """Chunks in one collection of a Qdrant server (QDRANT_URL) with a sparse vector whose IDF Qdrant applies (and a
    dense one with the dense encoder). The same calls run in qdrant-client's local mode (a folder, one process),
    which the behaviour tests use in place of a server and which an earlier build used as its embedded engine; there
    every call runs on the index's own thread (`_LocalLoop`)."""

    def __init__(
        self,
        client: AsyncQdrantClient,
        where: str,
        dense: tuple[str, int] | None = None,
        local: _LocalLoop | None = None,
    ) -> None:
        self._client = client
        self._where = where
        self._dense = dense
        self._local = local
        self.collection = points.collection(dense)

    @classmethod
    async def open(cls, url: str | None, path: Path, *, dense: tuple[str, int] | None = None) -> QdrantIndex:
        """`dense` is the dense encoder's (fingerprint, dimension), when there is one."""
        if url:
            index = cls(AsyncQdrantClient(url=url, timeout=30), url, dense)
        else:
            local = _LocalLoop()

            async def opened() -> AsyncQdrantClient:
                return AsyncQdrantClient(path=str(path))

            try:
                client = await local.run(opened())
            except RuntimeError as exc:  # qdrant-client's word for a folder another process holds
                local.close()
                raise StoreUnavailable(
                    f"Qdrant local mode at {path} is in use by another process ({exc}); run one knowledge service "
                    "per SAIP_HOME, or set QDRANT_URL to a Qdrant server"
                ) from None
            index = cls(client, f"local {path}", dense, local)
        await index._ensure(server=bool(url))
        return index

    def describe(self) -> str:
        return f"{self._where}, collection {self.collection}"

    async def close(self) -> None:
        if self._local is None:
            await self._client.close()
            return
        try:
            await self._local.run(self._client.close())
        finally:
            self._local.close()

    async def _call(self, operation: Awaitable[_T]) -> _T:
        try:
            return await (self._local.run(operation) if self._local is not None else operation)
        except (UnexpectedResponse, ResponseHandlingException, OSError) as exc:
            raise StoreUnavailable(
                f"Qdrant at {self._where} failed ({type(exc).__name__}); try again shortly"
            ) from None

    async def _ensure(self, *, server: bool) -> None:
        if await self._call(self._client.collection_exists(self.collection)):
            return
        dense = (
            {DENSE: models.VectorParams(size=self._dense[1], distance=models.Distance.COSINE)} if self._dense else {}
        )
        await self._call(
            self._client.create_collection(
                self.collection,
                vectors_config=dense,
                sparse_vectors_config={VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
        )
        if server:  # local mode filters by scanning and warns that an index has no effect there
            await self._call(
                self._client.create_payload_index(self.collection, points.INGEST, models.PayloadSchemaType.KEYWORD)
            )

    async def add(self, ingest_id: str, document_id: str, chunks: Sequence[IndexedChunk]) -> None:
        batch = [
            models.PointStruct(
                id=str(uuid.uuid4()), vector=_vectors(item), payload=points.payload(ingest_id, document_id, item)
            )
            for item in chunks
        ]
        await self._call(self._client.upsert(self.collection, points=batch, wait=True))

    async def remove(self, ingest_id: str) -> None:
        selector = models.FilterSelector(filter=_ingest_is([ingest_id]))
        await self._call(self._client.delete(self.collection, points_selector=selector, wait=True))

    async def count(self, ingest_id: str | None = None) -> int:
        where = _ingest_is([ingest_id]) if ingest_id else None
        return (await self._call(self._client.count(self.collection, count_filter=where, exact=True))).count

    async def search(self, query: sparse.SparseVector, ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        return await self._query(_vector(query), VECTOR, ingest_ids, limit)

    async def search_dense(self, query: list[float], ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        if self._dense is None:
            raise AssertionError("search_dense on a collection without dense vectors")
        return await self._query(query, DENSE, ingest_ids, limit)

    async def _query(
        self, query: models.SparseVector | list[float], using: str, ingest_ids: Sequence[str], limit: int
    ) -> list[Hit]:
        request = self._client.query_points(
            self.collection,
            query=query,
            using=using,
            query_filter=_ingest_is(ingest_ids),
            search_params=_LIVE_IDF if using == VECTOR else None,
            limit=limit,
            with_payload=True,
        )
        found = await self._call(request)
        return [points.hit(point.payload or {}, point.score) for point in found.points]

    async def stored(self, ingest_ids: Sequence[str]) -> AsyncIterator[list[StoredPoint]]:
        """The chunks of these ingests, a page at a time."""
        offset: Any = None
        while True:
            records, offset = await self._call(
                self._client.scroll(
                    self.collection,
                    scroll_filter=_ingest_is(ingest_ids),
                    limit=edge.PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=True,
                )
            )
            if records:
                yield [points.stored(r.id, r.vector, r.payload) for r in records]
            if offset is None:
                return

    async def snapshot(self, ingest_ids: Sequence[str], target: Path) -> SnapshotManifest:
        """The chunks of these ingests as a Qdrant Edge shard snapshot (the format a shipped knowledge tool opens)."""
        return await edge.write_snapshot(self.stored(ingest_ids), self._dense, ingest_ids, target)


class GuardedFetcher:
    """Ingest by URL through the shared network guard (strict: public addresses only); a refusal is also a
    sandbox-guard-blocked risk event."""

    def __init__(self, risk: RiskPublisher | None, mode: NetworkMode = NetworkMode.STRICT) -> None:
        self._risk = risk
        self._mode = mode

    async def fetch(self, url: str, max_bytes: int) -> Fetched:
        try:
            response = await guarded_fetch(url, policy=NetPolicy(self._mode, max_body=max_bytes))
        except GuardBlocked as exc:
            if self._risk is not None:
                await self._risk.publish(
                    SANDBOX_GUARD_BLOCKED,
                    WARN,
                    f"knowledge ingest by URL refused: {exc}",
                    reason=exc.reason.value,
                    subject=url[:500],
                )
            raise Refused(
                f"the URL was refused by the network guard: {exc} Ingest a file or the text instead."
            ) from None
        if response.status >= 400:
            raise NotFound(f"'{url}' answered HTTP {response.status}; check the URL")
        if response.status >= 300:
            raise Refused(f"'{url}' answered HTTP {response.status} without a usable redirect; give the final URL")
        return Fetched(response.body, response.headers.get("content-type", ""), response.url)
