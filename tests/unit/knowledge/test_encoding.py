"""Chunks encoded in worker processes come back exactly as the service would encode them itself, and a worker that
dies fails nothing."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from saip.knowledge import encoding, sparse

TEXTS = [
    "The gateway answers every MCP request after its audit record is acknowledged.",
    "Knowledge pipelines search documents; each chunk is a lexical vector of BM25 weights.",
    "",
]


@pytest.mark.parametrize("workers", [0, 1, 2])
async def test_every_mode_encodes_exactly_as_the_encoder_does(workers: int) -> None:
    encoder = encoding.Encoder(workers)
    try:
        assert await encoder.start(TEXTS) == [sparse.encode_document(text) for text in TEXTS]
    finally:
        encoder.close()


async def test_a_dead_worker_fails_nothing_and_the_next_batch_gets_a_new_one() -> None:
    others = set(multiprocessing.active_children())  # whatever else this test process runs
    encoder = encoding.Encoder(1)
    try:
        expected = [sparse.encode_document(text) for text in TEXTS]
        assert await encoder.start(TEXTS) == expected
        [worker] = set(multiprocessing.active_children()) - others
        os.kill(worker.pid or 0, signal.SIGKILL)
        worker.join(10)
        assert await encoder.start(TEXTS) == expected  # encoded in the service while the pool is replaced
        assert await encoder.start(TEXTS) == expected
        [replacement] = set(multiprocessing.active_children()) - others
        assert replacement.pid != worker.pid
    finally:
        encoder.close()
