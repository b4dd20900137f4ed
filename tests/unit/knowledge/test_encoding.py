"""A large document's chunks encoded in the encoder process: the index (Qdrant Edge itself) and the keywords are
exactly what encoding in the service gives, a failed, cancelled or crashed ingest leaves nothing and the next one
starts a new process, a document that comes while the process is busy is encoded in the service, and `close` ends
the process."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saip.knowledge import sparse
from saip.knowledge.edge import EdgeIndex
from saip.knowledge.encoder_process import pack, unpack
from saip.knowledge.encoding import FIRST_STEP, STEP, Encoders, steps
from saip.knowledge.errors import StoreUnavailable
from saip.knowledge.knowledge import Knowledge
from tests.unit.knowledge import fakes
from tests.unit.knowledge.fakes import Faked
from tests.unit.knowledge.samples import prose

ALWAYS = 1  # offload_at: every document goes to the encoder process
NEVER = 1 << 30  # offload_at: every document is encoded in the service, as before the encoder process

CORPUS = {
    "Compaction": prose(1600, topic="compaction"),  # about 300 chunks
    "Runbook": "# NATS runbook\n\nRestart the NATS broker with systemctl when clients report a stale connection.",
    # One paragraph of 2,100 tokens cut between the tokens of a piece: the keywords are read from the text.
    "Cut": " ".join(f"compaction{i % 7}.segment" for i in range(700)),
}

vectors = st.lists(
    st.dictionaries(st.integers(0, (1 << 32) - 1), st.floats(allow_nan=False, allow_infinity=False), max_size=40).map(
        lambda weights: sparse.SparseVector(tuple(weights), tuple(weights.values()))
    ),
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(vectors)
def test_packed_vectors_read_back_as_the_same_indices_and_weights(given_vectors: list[sparse.SparseVector]) -> None:
    assert unpack(pack(given_vectors)) == given_vectors


@pytest.mark.parametrize("total", [0, 1, FIRST_STEP, FIRST_STEP + 1, STEP, STEP + 1, 4 * STEP, 600])
def test_the_steps_cover_every_chunk_once_and_end_on_every_multiple_of_a_step(total: int) -> None:
    bounds = steps(total)
    assert [i for first, end in bounds for i in range(first, end)] == list(range(total))
    assert all(first < end for first, end in bounds)
    assert {end for _, end in bounds} >= set(range(STEP, total, STEP))
    assert all(end - first <= STEP for first, end in bounds)


async def _ingested(
    knowledge: Knowledge, index: EdgeIndex
) -> tuple[dict[str, tuple[int, list[str]]], list[tuple[Any, ...]], list[tuple[int, int]]]:
    """The corpus ingested: each document's chunks and keywords, every point as the engine holds it (but the ingest
    id and the point id: both are random), and the progress reported."""
    reported: list[tuple[int, int]] = []

    async def progress(done: int, total: int, message: str) -> None:
        reported.append((done, total))

    documents, ingest_ids = {}, []
    for name, text in CORPUS.items():
        document, _ = await knowledge.ingest("text", text, name, progress=progress)
        documents[name] = (document.chunks, list(document.keywords))
        ingest_ids.append(document.ingest_id)
    stored = []
    async for page in index.stored(ingest_ids):
        for point in page:
            payload = {key: value for key, value in point.payload.items() if key != "ingest"}
            stored.append((sorted(payload.items()), sorted(point.vector.as_dict().items()), point.dense))
    return documents, sorted(stored), reported


async def test_the_encoder_process_indexes_a_corpus_exactly_as_the_service_does(tmp_path: Path) -> None:
    index = await EdgeIndex.open(tmp_path / "edge")
    results = []
    try:
        for offload_at in (NEVER, ALWAYS):
            knowledge = fakes.rules(tmp_path, encoders=Encoders(offload_at=offload_at)).knowledge
            knowledge.index = index  # one engine; the two ingests of each document differ by their ingest id
            try:
                results.append(await _ingested(knowledge, index))
                assert (knowledge.encoders.pid is not None) is (offload_at == ALWAYS)
            finally:
                await knowledge.close()
    finally:
        await index.close()
    in_service, offloaded = results
    assert offloaded == in_service
    documents, stored, _ = offloaded
    assert len(stored) == sum(chunks for chunks, _ in documents.values()) and documents["Compaction"][0] > 256
    assert {name: keywords for name, (_, keywords) in documents.items()} == {
        name: sparse.keywords(text) for name, text in CORPUS.items()
    }


@pytest.fixture
async def offloading(tmp_path: Path) -> AsyncIterator[Faked]:
    faked = fakes.rules(tmp_path, encoders=Encoders(offload_at=ALWAYS))
    yield faked
    await faked.knowledge.close()


def _nothing_left(rules: Faked) -> bool:
    return not rules.knowledge.documents() and not rules.originals.data and not rules.index.chunks


async def test_an_offloaded_ingest_that_fails_or_is_cancelled_leaves_nothing_and_the_next_one_succeeds(
    offloading: Faked,
) -> None:
    text = prose(1600, topic="compaction")
    offloading.index.fail_at = 100
    with pytest.raises(StoreUnavailable):
        await offloading.knowledge.ingest("text", text, "Compaction")
    assert _nothing_left(offloading)

    offloading.index.fail_at = None
    with anyio.CancelScope() as scope:

        async def caller_went_away(done: int, total: int, message: str) -> None:
            if done:
                scope.cancel()

        await offloading.knowledge.ingest("text", text, "Compaction", progress=caller_went_away)
    assert scope.cancelled_caught and _nothing_left(offloading)

    document, _ = await offloading.knowledge.ingest("text", text, "Compaction")
    assert await offloading.index.count(document.ingest_id) == document.chunks > 256
    assert list(document.keywords) == sparse.keywords(text)


async def test_an_encoder_process_that_dies_fails_the_ingest_with_what_to_do_and_the_next_starts_another(
    offloading: Faked,
) -> None:
    text = prose(1600, topic="compaction")
    await offloading.knowledge.ingest("text", "Compaction merges segments. " * 40, "Warm-up")
    first = offloading.knowledge.encoders.pid
    assert first is not None

    async def killed(done: int, total: int, message: str) -> None:
        if done:
            os.kill(first, signal.SIGKILL)

    with pytest.raises(RuntimeError, match=r"encoder process ended \(exit code -9\).*Ingest the document again"):
        await offloading.knowledge.ingest("text", text, "Compaction", progress=killed)
    assert [d.name for d in offloading.knowledge.documents()] == ["Warm-up"]
    assert offloading.knowledge.encoders.pid is None

    document, _ = await offloading.knowledge.ingest("text", text, "Compaction")
    assert await offloading.index.count(document.ingest_id) == document.chunks
    assert offloading.knowledge.encoders.pid not in (None, first)


async def test_a_large_document_that_comes_while_the_process_is_busy_is_encoded_in_the_service(
    offloading: Faked,
) -> None:
    texts = {"Compaction": prose(1600, topic="compaction"), "Ingest": prose(1600, topic="ingest")}
    done = {}

    async def ingest(name: str) -> None:
        document, _ = await offloading.knowledge.ingest("text", texts[name], name)
        done[name] = document

    async with anyio.create_task_group() as group:
        for name in texts:
            group.start_soon(ingest, name)
    for name, document in done.items():
        assert await offloading.index.count(document.ingest_id) == document.chunks
        assert list(document.keywords) == sparse.keywords(texts[name])
    assert len(done) == 2


async def test_close_ends_the_encoder_process(offloading: Faked) -> None:
    await offloading.knowledge.ingest("text", prose(40), "Notes")
    pid = offloading.knowledge.encoders.pid
    assert pid is not None
    await offloading.knowledge.close()
    assert offloading.knowledge.encoders.pid is None
    with pytest.raises(ProcessLookupError):  # ended and reaped
        os.kill(pid, 0)


async def test_an_encoder_command_that_exits_at_once_fails_the_ingest_and_leaves_nothing(tmp_path: Path) -> None:
    rules = fakes.rules(tmp_path, encoders=Encoders(offload_at=ALWAYS, command=(sys.executable, "-c", "exit(3)")))
    try:
        with pytest.raises(RuntimeError, match=r"exit code 3"):
            await rules.knowledge.ingest("text", prose(40), "Notes")
        assert _nothing_left(rules)
    finally:
        await rules.knowledge.close()
