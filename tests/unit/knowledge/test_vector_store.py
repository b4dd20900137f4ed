"""One behaviour for both vector-store adapters: Qdrant Edge in-process (the embedded default), and qdrant-client (a
Qdrant server; here its local mode, which speaks the same client API). Each test runs against both, in a folder of
its own: chunks by ingest id, BM25 x IDF and cosine scores, filters, a reopen from disk, the event loop kept free
during a search, and snapshots a shipped knowledge tool opens read-only."""

from __future__ import annotations

import asyncio
import math
import random
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from saip.knowledge import sparse
from saip.knowledge.chunking import Chunk
from saip.knowledge.edge import EdgeIndex
from saip.knowledge.errors import InvalidRequest, Refused, StoreUnavailable
from saip.knowledge.ports import Hit, IndexedChunk
from saip.knowledge.qdrant import QdrantIndex

ADAPTERS = ["qdrant-edge", "qdrant-client"]
DENSE = ("testmodel", 3)
Adapter = EdgeIndex | QdrantIndex


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _open(adapter: str, folder: Path, dense: tuple[str, int] | None = None) -> Adapter:
    if adapter == "qdrant-edge":
        return await EdgeIndex.open(folder, dense=dense)
    return await QdrantIndex.open(None, folder, dense=dense)


@asynccontextmanager
async def opened(adapter: str, folder: Path, dense: tuple[str, int] | None = None) -> AsyncIterator[Adapter]:
    index = await _open(adapter, folder, dense)
    try:
        yield index
    finally:
        await index.close()


def chunk(position: int, weights: dict[int, float], dense: list[float] | None = None) -> IndexedChunk:
    text = f"chunk {position}"
    start = position * 100
    vector = sparse.SparseVector(tuple(sorted(weights)), tuple(weights[key] for key in sorted(weights)))
    return IndexedChunk(Chunk(position, text, start, start + len(text), page=position + 1), vector, dense)


def query(*terms: int) -> sparse.SparseVector:
    return sparse.SparseVector(tuple(sorted(terms)), tuple(1.0 for _ in terms))


def idf(chunks: int, with_term: int) -> float:
    """Qdrant's IDF modifier."""
    return math.log(1 + (chunks - with_term + 0.5) / (with_term + 0.5))


def ranked(hits: Sequence[Hit]) -> list[tuple[str, int]]:
    return [(hit.ingest_id, hit.position) for hit in hits]


def scores(hits: Sequence[Hit]) -> list[float]:
    return [hit.score for hit in hits]


def close_to(expected: list[float]) -> object:
    """The engines score in float32 (a small IDF, ln(1 + x) of a small x, keeps about four digits)."""
    return pytest.approx(expected, rel=1e-4, abs=1e-6)


async def test_chunks_are_counted_and_removed_by_ingest(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store") as index:
        await index.add("a", "doc-a", [chunk(0, {1: 1.0}), chunk(1, {2: 1.0}), chunk(2, {3: 1.0})])
        await index.add("b", "doc-b", [chunk(0, {1: 1.0}), chunk(1, {4: 1.0})])
        before = (await index.count(), await index.count("a"), await index.count("b"))
        await index.remove("a")
        after = (await index.count(), await index.count("a"), await index.count("b"))
    assert before == (5, 3, 2)
    assert after == (2, 0, 2)


async def test_sparse_scores_are_bm25_weights_times_the_idf_of_the_live_chunks(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store") as index:
        await index.add("a", "doc-a", [chunk(0, {1: 1.0, 2: 0.5}), chunk(1, {1: 2.0})])
        await index.add("b", "doc-b", [chunk(0, {3: 1.0})])
        one = await index.search(query(1), ["a", "b"], 5)
        both = await index.search(query(1, 2), ["a", "b"], 5)
        await index.remove("b")  # two chunks left: the IDF of term 1 changes with them
        after = await index.search(query(1), ["a"], 5)
    three = idf(3, 2)
    assert ranked(one) == [("a", 1), ("a", 0)] and scores(one) == close_to([2 * three, three])
    assert ranked(both) == [("a", 0), ("a", 1)] and scores(both) == close_to([three + 0.5 * idf(3, 1), 2 * three])
    assert ranked(after) == [("a", 1), ("a", 0)] and scores(after) == close_to([2 * idf(2, 2), idf(2, 2)])


async def test_a_search_sees_only_the_ingests_it_names_and_at_most_the_limit(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store") as index:
        await index.add("a", "doc-a", [chunk(n, {7: 1.0 + n}) for n in range(4)])
        await index.add("b", "doc-b", [chunk(n, {7: 10.0 + n}) for n in range(4)])
        only_a = await index.search(query(7), ["a"], 3)
        either = await index.search(query(7), ["a", "b"], 8)
        unknown = await index.search(query(7), ["c"], 3)
    assert [(hit.ingest_id, hit.position) for hit in only_a] == [("a", 3), ("a", 2), ("a", 1)]
    assert [hit.ingest_id for hit in either] == ["b"] * 4 + ["a"] * 4
    assert unknown == []


async def test_a_hit_carries_its_chunk_s_place_and_text(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store") as index:
        await index.add("a", "doc-a", [chunk(4, {5: 1.0})])
        [hit] = await index.search(query(5), ["a"], 5)
    assert (hit.ingest_id, hit.position, hit.start, hit.end, hit.page, hit.text) == ("a", 4, 400, 407, 5, "chunk 4")


async def test_dense_search_ranks_by_cosine(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store", DENSE) as index:
        await index.add(
            "a",
            "doc-a",
            [
                chunk(0, {1: 1.0}, [1.0, 0.0, 0.0]),
                chunk(1, {1: 1.0}, [0.0, 1.0, 0.0]),
                chunk(2, {1: 1.0}, [0.6, 0.8, 0]),
            ],
        )
        await index.add("b", "doc-b", [chunk(0, {1: 1.0}, [0.0, 1.0, 0.0])])
        hits = await index.search_dense([0.0, 1.0, 0.0], ["a"], 5)
    assert ranked(hits) == [("a", 1), ("a", 2), ("a", 0)] and scores(hits) == close_to([1.0, 0.8, 0.0])


async def test_the_chunks_are_found_again_after_a_reopen(adapter: str, tmp_path: Path) -> None:
    async with opened(adapter, tmp_path / "store", DENSE) as index:
        await index.add("a", "doc-a", [chunk(0, {1: 1.0, 2: 1.0}, [1.0, 0, 0]), chunk(1, {2: 1.0}, [0, 1.0, 0])])
        before = await index.search(query(1, 2), ["a"], 5)
    async with opened(adapter, tmp_path / "store", DENSE) as index:
        count = await index.count("a")
        after = await index.search(query(1, 2), ["a"], 5)
        dense = await index.search_dense([0, 1.0, 0], ["a"], 1)
    assert count == 2 and ranked(after) == ranked(before) and scores(after) == close_to(scores(before))
    assert [hit.position for hit in dense] == [1]


async def test_a_second_opener_of_the_edge_folder_is_refused(tmp_path: Path) -> None:
    """The embedded shard belongs to one process (a server is shared by design: this is Edge's alone)."""
    async with opened("qdrant-edge", tmp_path / "store"):
        with pytest.raises(
            StoreUnavailable, match="in use by another process; run one knowledge service per SAIP_HOME"
        ):
            await _open("qdrant-edge", tmp_path / "store")


async def test_closing_ends_the_engine_thread_and_releases_the_folder(adapter: str, tmp_path: Path) -> None:
    def engine_threads() -> int:
        return sum(thread.name.startswith("qdrant-") for thread in threading.enumerate())

    index = await _open(adapter, tmp_path / "store")
    await index.count()
    running = engine_threads()
    await index.close()
    assert (running, engine_threads()) == (1, 0)
    async with opened(adapter, tmp_path / "store") as reopened:
        assert await reopened.count() == 0


async def test_the_event_loop_keeps_running_while_the_engine_searches(adapter: str, tmp_path: Path) -> None:
    """Both engines compute on the caller's thread (qdrant-client's local mode scans in Python, Edge in Rust without
    releasing the GIL); each adapter runs them on a thread of its own, so the service's loop (gRPC health checks,
    other calls) runs while a search does."""
    rng = random.Random(7)
    words = [f"word{n}" for n in range(400)]
    chunks = []
    for position in range(400):
        text = " ".join(rng.choices(words, k=600))
        chunks.append(IndexedChunk(Chunk(position, text, 0, len(text)), sparse.encode_document(text)))
    async with opened(adapter, tmp_path / "store") as index:
        await index.add("ingest-1", "doc-1", chunks)
        ticks = 0
        searching = True

        async def ticker() -> None:
            nonlocal ticks
            while searching:
                ticks += 1
                await asyncio.sleep(0)

        beside = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        hits = await index.search(sparse.encode_query("word3 word5 word8"), ["ingest-1"], 5)
        during = ticks - before
        searching = False
        await beside
    assert len(hits) == 5
    # Run on the loop itself, the search would have let the ticker run at most once (the tick scheduled before it);
    # on the engine's thread the loop ticks all along.
    assert during > 1


@pytest.mark.parametrize("dense", [None, DENSE], ids=["lexical", "hybrid"])
async def test_a_snapshot_holds_the_named_ingests_and_opens_read_only(
    adapter: str, dense: tuple[str, int] | None, tmp_path: Path
) -> None:
    vector = [1.0, 0.0, 0.0] if dense else None
    async with opened(adapter, tmp_path / "store", dense) as index:
        await index.add("a", "doc-a", [chunk(n, {1: 1.0 + n, 2: 1.0}, vector) for n in range(300)])  # two pages
        await index.add("b", "doc-b", [chunk(0, {1: 5.0}, vector)])
        manifest = await index.snapshot(["a"], tmp_path / "shipped" / "tool.snapshot")
    opened_snapshot, read = await EdgeIndex.from_snapshot(tmp_path / "shipped" / "tool.snapshot", tmp_path / "open")
    try:
        count = await opened_snapshot.count()
        hits = await opened_snapshot.search(query(1), ["a", "b"], 2)
        nearest = await opened_snapshot.search_dense([1.0, 0.0, 0.0], ["a"], 1) if dense else []
        with pytest.raises(Refused, match="read-only"):
            await opened_snapshot.add("c", "doc-c", [chunk(0, {1: 1.0})])
        described = opened_snapshot.describe()
    finally:
        await opened_snapshot.close()
    assert (manifest.chunks, manifest.ingest_ids, manifest.dense) == (300, ("a",), dense)
    assert read == manifest and count == 300
    # The snapshot is a collection of its own: term 1 is in every one of its chunks, so its IDF is that of 300 of 300.
    assert ranked(hits) == [("a", 299), ("a", 298)]
    assert scores(hits) == close_to([300 * idf(300, 300), 299 * idf(300, 300)])
    assert [hit.text for hit in hits] == ["chunk 299", "chunk 298"]
    assert len(nearest) == (1 if dense else 0)
    assert described == f"Qdrant Edge snapshot at {tmp_path / 'open'}, collection {manifest.collection}"
    assert manifest.collection == ("saip_chunks_testmodel" if dense else "saip_chunks")


async def test_a_file_that_is_not_a_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.tar").write_bytes(b"not an archive")
    with pytest.raises(InvalidRequest, match="is not a knowledge snapshot of this version"):
        await EdgeIndex.from_snapshot(tmp_path / "notes.tar", tmp_path / "open")
