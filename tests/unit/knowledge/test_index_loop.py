"""Qdrant's local mode scans in Python without yielding; the index runs it on a thread of its own, so the service's
event loop (gRPC health checks, other calls) keeps running while a search scans."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

from saip.knowledge import sparse
from saip.knowledge.chunking import Chunk
from saip.knowledge.ports import IndexedChunk
from saip.knowledge.qdrant import QdrantIndex

WORDS = [f"word{n}" for n in range(400)]


def _chunks(count: int) -> list[IndexedChunk]:
    rng = random.Random(7)
    chunks = []
    for position in range(count):
        text = " ".join(rng.choices(WORDS, k=600))
        chunks.append(IndexedChunk(Chunk(position, text, 0, len(text)), sparse.encode_document(text)))
    return chunks


async def test_the_event_loop_keeps_running_while_local_mode_scans(tmp_path: Path) -> None:
    index = await QdrantIndex.open(None, tmp_path / "qdrant")
    try:
        await index.add("ingest-1", "doc-1", _chunks(400))
        ticks = 0
        scanning = True

        async def ticker() -> None:
            nonlocal ticks
            while scanning:
                ticks += 1
                await asyncio.sleep(0)

        beside = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        hits = await index.search(sparse.encode_query("word3 word5 word8"), ["ingest-1"], 5)
        during = ticks - before
        scanning = False
        await beside
    finally:
        await index.close()
    assert len(hits) == 5
    # A scan of 400 chunks takes tens of milliseconds; on the loop itself it would have let the ticker run at most
    # once (the tick scheduled before it), on its own thread the loop ticks all along.
    assert during > 1


async def test_the_index_thread_ends_when_the_index_closes(tmp_path: Path) -> None:
    index = await QdrantIndex.open(None, tmp_path / "qdrant")
    assert any(thread.name == "qdrant-local" for thread in threading.enumerate())
    await index.close()
    assert not any(thread.name == "qdrant-local" for thread in threading.enumerate())
    reopened = await QdrantIndex.open(None, tmp_path / "qdrant")  # the folder's lock went with the client
    await reopened.close()
