"""The vector index on a Qdrant server (QDRANT_URL) through qdrant-client: chunks in one collection with a sparse
vector whose IDF Qdrant applies (and a dense one with the dense encoder). qdrant-client's local mode (a folder, one
process) speaks the same API and stands in for a server in the tests. qdrant-client's failures become
StoreUnavailable. The embedded engine is Qdrant Edge (`edge`)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from saip.knowledge import edge, points, sparse
from saip.knowledge.errors import StoreUnavailable
from saip.knowledge.points import DENSE, VECTOR, StoredPoint
from saip.knowledge.ports import Hit, IndexedChunk, SnapshotManifest

_T = TypeVar("_T")


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

    Local mode is a pure-Python engine: its async client scans every point of a search without ever yielding, for a
    time that grows with the collection (docs/knowledge.md). On the service's own loop that would stall every other
    call (gRPC health checks included) for the length of each search; here the scan holds only this thread, and its
    calls run one at a time, in order.
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
    which the behaviour tests use in place of a server; there every call runs on the index's own thread
    (`_LocalLoop`)."""

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
