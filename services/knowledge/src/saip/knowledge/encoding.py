"""Encoding chunks into lexical vectors off the service's event loop, overlapping the indexing of the batch before.

Qdrant Edge holds the GIL while it indexes, and encoding is pure Python, so a thread cannot encode the next batch
while the engine takes this one. With `knowledge.encode-workers` at 1 or more (the default 1), batches are encoded
in worker processes beside the service: an ingest starts encoding batch n+1 before it hands batch n to the engine,
so on a second core the two overlap. At 0 they are encoded in a thread, one after the other (a host with one core,
or a container that may not start processes).

The workers start with the first ingest (spawned, not forked: the service's gRPC and NATS threads must not be
copied) and stop with the service. A worker that dies (killed, out of memory) fails nothing: its batch is encoded
in a thread, and the next ingest starts a new worker.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import anyio

from saip.knowledge import sparse

logger = logging.getLogger(__name__)


def encode_all(texts: Sequence[str]) -> list[sparse.SparseVector]:
    return [sparse.encode_document(text) for text in texts]


class Encoder:
    def __init__(self, workers: int = 0) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def start(self, texts: Sequence[str]) -> asyncio.Future[list[sparse.SparseVector]]:
        """Start encoding `texts` now; await the result when it is needed (or cancel it)."""
        if self.workers == 0:
            return asyncio.ensure_future(anyio.to_thread.run_sync(encode_all, texts))
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return asyncio.ensure_future(self._in_worker(self._pool, list(texts)))

    async def _in_worker(self, pool: ProcessPoolExecutor, texts: list[str]) -> list[sparse.SparseVector]:
        try:
            return await asyncio.wrap_future(pool.submit(encode_all, texts))
        except BrokenProcessPool:
            logger.warning("an encoding worker died; encoding its batch here and starting a new worker")
            if self._pool is pool:
                self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return await anyio.to_thread.run_sync(encode_all, texts)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
