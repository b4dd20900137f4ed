"""The embedded vector store: Qdrant Edge (`qdrant_edge`, the Qdrant engine as an in-process library), one shard
per collection under the data folder; its snapshots (what a shipped knowledge tool carries); and the retirement of
a folder of qdrant-client's local mode, whose documents are indexed into Edge again.

The engine is synchronous and holds the GIL while it works, so every call runs on the index's own thread, one at a
time and in order, and a write is cut into slices (`UPSERT_SLICE`): the service's event loop waits at most one slice
or one search, never a whole batch, and a search queued behind an ingest still answers in milliseconds.

Scores are those of the qdrant-client adapter: BM25 weights times an IDF computed over the live chunks of the whole
collection (the engine's own statistics would still count removed chunks until a segment is vacuumed), and the
cosine for dense vectors. A snapshot is a shard of its own holding only the chunks of the ingests asked for, so its
IDF is that of those documents.
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import logging
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import qdrant_edge as qe

from saip.knowledge import points, sparse
from saip.knowledge.errors import InvalidRequest, Refused, StoreUnavailable
from saip.knowledge.points import StoredPoint
from saip.knowledge.ports import Hit, Index, IndexedChunk, SnapshotManifest
from saip.v1 import knowledge_pb2

logger = logging.getLogger(__name__)

UPSERT_SLICE = 64  # points per engine call, short enough that the event loop never waits long on a write
PAGE = 256  # points per page when a snapshot reads them out
CONFIG_FILE = "edge_config.json"  # what the engine writes into a shard folder it created
MANIFEST = "saip-snapshot.json"  # our own description of a snapshot, beside the engine's files in the archive
SNAPSHOT_FORMAT = 1
_T = TypeVar("_T")


def _ingest_is(ingest_ids: Sequence[str]) -> qe.Filter:
    return qe.Filter(must=[qe.FieldCondition(key=points.INGEST, match=qe.MatchAny(any=list(ingest_ids)))])


# An empty corpus filter selects every live point: IDF then leaves out the removed ones (see the module docstring).
_LIVE_IDF = qe.SearchParams(idf=qe.IdfParams(corpus=qe.Filter()))


def _config(dense: tuple[str, int] | None) -> qe.EdgeConfig:
    vectors = {points.DENSE: qe.EdgeVectorParams(size=dense[1], distance=qe.Distance.Cosine)} if dense else None
    return qe.EdgeConfig(
        vectors=vectors, sparse_vectors={points.VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    )


def _open_shard(path: Path, dense: tuple[str, int] | None) -> qe.EdgeShard:
    if (path / CONFIG_FILE).is_file():
        return qe.EdgeShard.load(str(path))
    path.mkdir(parents=True, exist_ok=True)
    shard = qe.EdgeShard.create(str(path), _config(dense))
    # Every query filters by ingest id; the keyword index answers that filter without reading payloads.
    shard.update(qe.UpdateOperation.create_field_index(points.INGEST, qe.PayloadSchemaType.Keyword))
    return shard


def _unpack(snapshot: Path, folder: Path) -> qe.EdgeShard:
    if folder.exists():
        raise InvalidRequest(f"{folder} already exists; unpack a snapshot into a new folder")
    qe.EdgeShard.unpack_snapshot(str(snapshot), str(folder))
    return qe.EdgeShard.load(str(folder))


def _point(point_id: str, vector: sparse.SparseVector, dense: list[float] | None, payload: dict[str, Any]) -> qe.Point:
    vectors: dict[str, Any] = {points.VECTOR: qe.SparseVector(list(vector.indices), list(vector.values))}
    if dense is not None:
        vectors[points.DENSE] = dense
    return qe.Point(point_id, vectors, payload)


def _upsert(shard: qe.EdgeShard, batch: Sequence[qe.Point]) -> None:
    for first in range(0, len(batch), UPSERT_SLICE):
        shard.update(qe.UpdateOperation.upsert_points(list(batch[first : first + UPSERT_SLICE])))


def _page(shard: qe.EdgeShard, ingest_ids: Sequence[str], offset: Any) -> tuple[list[StoredPoint], Any]:
    request = qe.ScrollRequest(
        offset=offset, limit=PAGE, filter=_ingest_is(ingest_ids), with_payload=True, with_vector=True
    )
    records, following = shard.scroll(request)
    return [points.stored(r.id, r.vector, r.payload) for r in records], following


class _EngineThread:
    """The one thread the engine runs on; the engine's own failures (a plain `Exception` with its message) become
    StoreUnavailable, anything else is a bug and passes through."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qdrant-edge")

    async def run(self, operation: Callable[..., _T], *args: Any) -> _T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, functools.partial(operation, *args))
        except Exception as exc:
            if type(exc) is not Exception:
                raise
            raise StoreUnavailable(f"Qdrant Edge at {self._where} failed: {exc}") from None

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class EdgeIndex:
    """Chunks in one Qdrant Edge shard (a folder, one process): a sparse vector whose IDF the engine applies, and a
    dense one with the dense encoder. `read_only` is a snapshot opened to be searched (a shipped knowledge tool)."""

    def __init__(
        self,
        shard: qe.EdgeShard,
        path: Path,
        dense: tuple[str, int] | None,
        thread: _EngineThread,
        *,
        read_only: bool = False,
        collection: str = "",
    ) -> None:
        self._shard = shard
        self._path = path
        self._dense = dense
        self._thread = thread
        self._read_only = read_only
        self.collection = collection or path.name

    @classmethod
    async def open(cls, folder: Path, *, dense: tuple[str, int] | None = None) -> EdgeIndex:
        """The collection's shard under `folder`, created on first use; `dense` is the dense encoder's
        (fingerprint, dimension), when there is one."""
        path = folder / points.collection(dense)
        thread = _EngineThread(str(path))
        try:
            shard = await thread.run(_open_shard, path, dense)
        except StoreUnavailable as exc:
            thread.close()
            if "WouldBlock" in str(exc):  # the engine's word for a shard another process holds open
                raise StoreUnavailable(
                    f"Qdrant Edge at {path} is in use by another process; run one knowledge service per SAIP_HOME, "
                    "or set QDRANT_URL to a Qdrant server"
                ) from None
            raise
        return cls(shard, path, dense, thread)

    @classmethod
    async def from_snapshot(cls, snapshot: Path, folder: Path) -> tuple[EdgeIndex, SnapshotManifest]:
        """Unpack a snapshot (`snapshot`) into `folder`, which must not exist yet, and open it read-only."""
        manifest = await asyncio.to_thread(read_manifest, snapshot)
        thread = _EngineThread(str(folder))
        try:
            shard = await thread.run(_unpack, snapshot, folder)
        except BaseException:
            thread.close()
            raise
        index = cls(shard, folder, manifest.dense, thread, read_only=True, collection=manifest.collection)
        return index, manifest

    def describe(self) -> str:
        if self._read_only:
            return f"Qdrant Edge snapshot at {self._path}, collection {self.collection}"
        return f"Qdrant Edge at {self._path.parent}, collection {self.collection}"

    async def close(self) -> None:
        try:
            await self._thread.run(self._shard.close)  # the engine flushes on close and releases the folder
        finally:
            self._thread.close()

    def _writable(self) -> None:
        if self._read_only:
            raise Refused(f"{self.describe()} is read-only; ingest into the knowledge service instead")

    async def add(self, ingest_id: str, document_id: str, chunks: Sequence[IndexedChunk]) -> None:
        self._writable()
        batch = [
            _point(str(uuid.uuid4()), item.vector, item.dense, points.payload(ingest_id, document_id, item))
            for item in chunks
        ]
        await self._thread.run(_upsert, self._shard, batch)

    async def remove(self, ingest_id: str) -> None:
        self._writable()
        operation = qe.UpdateOperation.delete_points_by_filter(_ingest_is([ingest_id]))
        await self._thread.run(self._shard.update, operation)

    async def count(self, ingest_id: str | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=_ingest_is([ingest_id]) if ingest_id else None)
        return await self._thread.run(self._shard.count, request)

    async def search(self, query: sparse.SparseVector, ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        nearest = qe.Query.Nearest(qe.SparseVector(list(query.indices), list(query.values)), using=points.VECTOR)
        return await self._query(nearest, ingest_ids, limit, _LIVE_IDF)

    async def search_dense(self, query: list[float], ingest_ids: Sequence[str], limit: int) -> list[Hit]:
        if self._dense is None:
            raise AssertionError("search_dense on a collection without dense vectors")
        return await self._query(qe.Query.Nearest(query, using=points.DENSE), ingest_ids, limit, None)

    async def _query(
        self, query: qe.Query, ingest_ids: Sequence[str], limit: int, params: qe.SearchParams | None
    ) -> list[Hit]:
        request = qe.QueryRequest(
            limit=limit, query=query, filter=_ingest_is(ingest_ids), with_payload=True, params=params
        )
        found = await self._thread.run(self._shard.query, request)
        return [points.hit(point.payload or {}, point.score) for point in found]

    async def stored(self, ingest_ids: Sequence[str]) -> AsyncIterator[list[StoredPoint]]:
        """The chunks of these ingests, a page at a time (each page is one engine call, so searches go between)."""
        offset: Any = None
        while True:
            page, offset = await self._thread.run(_page, self._shard, ingest_ids, offset)
            if page:
                yield page
            if offset is None:
                return

    async def snapshot(self, ingest_ids: Sequence[str], target: Path) -> SnapshotManifest:
        return await write_snapshot(self.stored(ingest_ids), self._dense, ingest_ids, target)


async def write_snapshot(
    pages: AsyncIterator[list[StoredPoint]], dense: tuple[str, int] | None, ingest_ids: Sequence[str], target: Path
) -> SnapshotManifest:
    """Write the chunks of `pages` as a Qdrant shard snapshot at `target` (replaced at once when it is complete).

    The archive is what `EdgeShard.unpack_snapshot` restores: the folder of a shard holding only these chunks, its
    segments and configuration (no write-ahead log: the shard is flushed before it is packed), with `MANIFEST`
    beside them.
    """
    await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
    thread = _EngineThread(str(target))
    try:
        with tempfile.TemporaryDirectory(prefix=".snapshot-", dir=target.parent) as scratch:
            shard_path = Path(scratch) / "shard"
            shard = await thread.run(qe.EdgeShard.create, str(shard_path), _config(dense))
            chunks = 0
            try:
                async for page in pages:
                    batch = [_point(p.id, p.vector, p.dense, p.payload) for p in page]
                    await thread.run(_upsert, shard, batch)
                    chunks += len(page)
                await thread.run(shard.flush)
            finally:
                await thread.run(shard.close)
            manifest = SnapshotManifest(points.collection(dense), dense, tuple(ingest_ids), chunks)
            await thread.run(_pack, shard_path, manifest, Path(scratch) / "snapshot.tar", target)
    finally:
        thread.close()
    logger.info("knowledge snapshot written", extra={"snapshot": str(target), "chunks": chunks})
    return manifest


def _pack(shard_path: Path, manifest: SnapshotManifest, packed: Path, target: Path) -> None:
    """Archive the flushed shard as `packed`, then move it to `target` in one step."""
    body = json.dumps(
        {
            "format": SNAPSHOT_FORMAT,
            "collection": manifest.collection,
            "dense": list(manifest.dense) if manifest.dense else None,
            "ingest_ids": list(manifest.ingest_ids),
            "chunks": manifest.chunks,
        }
    ).encode()
    with tarfile.open(packed, "w") as archive:
        archive.add(shard_path / "segments", arcname="segments")
        archive.add(shard_path / CONFIG_FILE, arcname=CONFIG_FILE)
        entry = tarfile.TarInfo(MANIFEST)
        entry.size = len(body)
        archive.addfile(entry, io.BytesIO(body))
    packed.replace(target)


def read_manifest(snapshot: Path) -> SnapshotManifest:
    """The manifest of a snapshot `write_snapshot` wrote; refuses any other file with what to do instead."""
    try:
        with tarfile.open(snapshot) as archive:
            handle = archive.extractfile(MANIFEST)  # KeyError when it is missing, None when it is not a file
            if handle is None:
                raise KeyError(MANIFEST)
            with handle:
                body = json.loads(handle.read())
        dense = body["dense"]
        if body["format"] != SNAPSHOT_FORMAT:
            raise ValueError(f"format {body['format']}")
        return SnapshotManifest(
            collection=str(body["collection"]),
            dense=(str(dense[0]), int(dense[1])) if dense else None,
            ingest_ids=tuple(str(item) for item in body["ingest_ids"]),
            chunks=int(body["chunks"]),
        )
    except (OSError, tarfile.TarError, KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(
            f"{snapshot} is not a knowledge snapshot of this version ({type(exc).__name__}: {exc}); take it again "
            "from the knowledge service"
        ) from None


@dataclass(frozen=True)
class LocalModeFolder:
    """The folder of chunks kept with qdrant-client's local mode ($SAIP_HOME/qdrant), retired into Edge.

    Its chunks are not read: the knowledge service re-indexes every document the Edge shard lacks from its stored
    original (`Knowledge.reindex`), and the folder is removed once every document is complete. If one cannot be
    re-indexed (its original is gone), the folder is kept, so nothing is lost, and the log says so at each start.
    """

    path: Path

    @classmethod
    def find(cls, path: Path) -> LocalModeFolder | None:
        return cls(path) if (path / "collection").is_dir() else None

    def announce(self) -> None:
        logger.info(
            "an earlier build's vector store (qdrant-client local mode) found; its documents are re-indexed into "
            "Qdrant Edge from their originals",
            extra={"folder": str(self.path)},
        )

    async def retire(self, index: Index, documents: Sequence[knowledge_pb2.Document]) -> bool:
        """Remove the folder if the index holds every document's chunks; returns whether it did."""
        incomplete = [d.name for d in documents if await index.count(d.ingest_id) != d.chunks]
        if incomplete:
            logger.warning(
                "the earlier build's vector store is kept: some documents could not be re-indexed from their "
                "originals; delete them and ingest them again, then restart",
                extra={"folder": str(self.path), "documents": incomplete},
            )
            return False
        await asyncio.to_thread(shutil.rmtree, self.path)
        logger.info("the earlier build's vector store was migrated and removed", extra={"folder": str(self.path)})
        return True
