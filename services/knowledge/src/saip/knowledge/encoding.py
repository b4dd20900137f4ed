"""Where an ingest's chunks are BM25-encoded: in this process, or, for a large document, in the encoder process
(`encoder_process`) while this one indexes the chunks already encoded.

Encoding is about half of an ingest's CPU and Qdrant Edge's upsert, which holds the GIL, most of the rest, so on a
thread they only take turns; in a second process the encoding runs on the other core. The service keeps one such
process, started at the first document of at least `OFFLOAD_AT` chunks (smaller ones are over before the pipeline
pays for itself) and kept for the next; it serves one document at a time, and a large document that comes while it
is busy is encoded here, as every document was before. Requests go `STEP` chunks at a time with at most `WINDOW` of
them unanswered, so at most that many steps of text and vectors are in flight (memory stays bounded whatever the
size of the document) and the process always has the next step to encode while the service indexes one.

Both ways give the same vectors (the same function computes them) and the same keywords: the tally of the chunks'
pieces they come from is counted in the service either way (with the encoder process, while it waits for the
process's answer: counting there would leave the process the longer part of the work).
A document whose ingest fails or is cancelled while the process works for it ends that process (answers to it may
still be on their way); the next large document starts a new one.
"""

from __future__ import annotations

import itertools
import logging
import pickle
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from saip.common import concurrently
from saip.knowledge import sparse
from saip.knowledge.encoder_process import HEADER, frame, unpack

logger = logging.getLogger(__name__)

STEP = 64  # chunks encoded, then indexed, at a time
FIRST_STEP = 16  # the first step is shorter: indexing starts as soon as it is encoded
WINDOW = 3  # steps sent to the encoder process and not yet answered
OFFLOAD_AT = 256  # the fewest chunks a document needs to be encoded in the encoder process
COMMAND = (sys.executable, "-m", "saip.knowledge.encoder_process")
STOP_WITHIN = 5.0

Indexed = Callable[[int, list[sparse.SparseVector]], Awaitable[None]]


def steps(total: int) -> list[tuple[int, int]]:
    """The bounds of the steps of `total` texts: FIRST_STEP, the rest of the first STEP, then STEP at a time, so
    each step but the last ends on a multiple of STEP (and so on every multiple of a BATCH of them)."""
    ends = [*range(STEP, total, STEP), total] if total else []
    if total > FIRST_STEP:
        ends.insert(0, FIRST_STEP)
    return list(itertools.pairwise([0, *ends]))


class Encoding(Protocol):
    """One document's encoding: `each` encodes the texts STEP at a time and hands each step's vectors, with the
    position of its first text, to `indexed`, in order; `keywords` are those of the pieces counted meanwhile."""

    async def each(self, texts: Sequence[str], indexed: Indexed) -> None: ...
    async def keywords(self) -> list[str]: ...


class InProcess:
    """Encoding on a worker thread of this process; `counted` keeps the tally the keywords come from."""

    def __init__(self, counted: bool) -> None:
        self._tally: Counter[str] | None = Counter() if counted else None

    async def each(self, texts: Sequence[str], indexed: Indexed) -> None:
        for first, end in steps(len(texts)):
            vectors = await anyio.to_thread.run_sync(_encode, texts[first:end], self._tally)
            await indexed(first, vectors)

    async def keywords(self) -> list[str]:
        return sparse.keywords_counted(self._tally or Counter())


def _encode(texts: Sequence[str], tally: Counter[str] | None) -> list[sparse.SparseVector]:
    return [sparse.encode_document(text, tally) for text in texts]


def _count(texts: Sequence[str], tally: Counter[str]) -> None:
    """What `sparse.encode_document(text, tally)` counts into the tally."""
    for text in texts:
        tally.update(sparse.pieces_of(text))


class _Remote(InProcess):
    """One document's encoding in the encoder process."""

    def __init__(self, process: Process, answers: BufferedByteReceiveStream, counted: bool) -> None:
        super().__init__(counted)
        self._process = process
        self._answers = answers

    async def each(self, texts: Sequence[str], indexed: Indexed) -> None:
        window = anyio.Semaphore(WINDOW)
        bounds = steps(len(texts))

        async def send() -> None:
            for first, end in bounds:
                await window.acquire()
                try:
                    await self._send(list(texts[first:end]))
                except _Ended:
                    return  # `receive` reads the end of the answers and says so

        async def receive() -> None:
            # Answers are read here while `send` may wait for the process to take a request: the process, in turn,
            # may be waiting for its answer to be read, so the two never wait on one task.
            for first, end in bounds:
                if self._tally is not None:
                    await anyio.to_thread.run_sync(_count, texts[first:end], self._tally)
                vectors = unpack(await self._answer())
                window.release()
                await indexed(first, vectors)

        try:
            await concurrently.both(send, receive)
        except _Ended:
            raise await self._ended() from None

    async def _send(self, texts: list[str]) -> None:
        assert self._process.stdin is not None
        try:
            await self._process.stdin.send(frame(texts))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise _Ended from None

    async def _answer(self) -> Any:
        try:
            header = await self._answers.receive_exactly(HEADER.size)
            body = await self._answers.receive_exactly(HEADER.unpack(header)[0])
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise _Ended from None
        return pickle.loads(body)

    async def _ended(self) -> RuntimeError:
        """What to raise when the process ended under a document: it names its exit code."""
        with anyio.move_on_after(STOP_WITHIN):
            await self._process.wait()
        return RuntimeError(
            f"the encoder process ended (exit code {self._process.returncode}) before it answered; the service's "
            "log holds its error. Ingest the document again."
        )


class _Ended(Exception):
    """The encoder process's end of a pipe closed: it ended."""


class Encoders:
    """Chooses each document's encoding and owns the encoder process, started at first use; `close` ends it."""

    def __init__(self, *, offload_at: int = OFFLOAD_AT, command: Sequence[str] = COMMAND) -> None:
        self._offload_at = offload_at
        self._command = tuple(command)
        self._lock = anyio.Lock()
        self._process: Process | None = None
        self._answers: BufferedByteReceiveStream | None = None

    @property
    def pid(self) -> int | None:
        """The encoder process's id while one runs (what the benchmark reads its CPU time by)."""
        return self._process.pid if self._process is not None else None

    @asynccontextmanager
    async def document(self, chunks: int, *, counted: bool) -> AsyncIterator[Encoding]:
        """The encoding of a document of `chunks` chunks: the encoder process's if it is large and the process is
        free, else this process's."""
        if chunks < self._offload_at or self._lock.locked():
            yield InProcess(counted)
            return
        async with self._lock:
            try:
                yield _Remote(*await self._started(), counted)
            except BaseException:
                # Answers to this document may still be on their way: the next document gets a new process.
                with anyio.CancelScope(shield=True):
                    await self._stop(kill=True)
                raise

    async def _started(self) -> tuple[Process, BufferedByteReceiveStream]:
        if self._process is not None and self._process.returncode is None and self._answers is not None:
            return self._process, self._answers
        await self._stop(kill=True)
        self._process = await anyio.open_process(self._command, stderr=None)
        assert self._process.stdout is not None
        self._answers = BufferedByteReceiveStream(self._process.stdout)
        logger.info("encoder process started", extra={"pid": self._process.pid})
        return self._process, self._answers

    async def _stop(self, *, kill: bool) -> None:
        process, self._process, self._answers = self._process, None, None
        if process is None:
            return
        if kill and process.returncode is None:
            process.kill()
        elif process.stdin is not None:
            await process.stdin.aclose()  # a process at rest reads the end of its input and returns
        with anyio.move_on_after(STOP_WITHIN):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()

    async def close(self) -> None:
        """End the encoder process, if one runs (after the document it encodes, if any)."""
        async with self._lock:
            await self._stop(kill=False)
