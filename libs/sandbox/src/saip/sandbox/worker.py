"""A sandbox worker process: `python -m saip.sandbox.worker <socket fd> <settings>`, started by the pool.

It keeps `spares` isolates ready (made, runtime evaluated), takes one for each call, sends the outcome, and only
then discards the spent isolate and makes the next, while it waits for work: a call never pays for its isolate
unless calls come faster than isolates can be made, and no state of one call can reach another. The process caps
its data segment, a backstop beyond each call's memory budget (for the interpreter's own memory and the worker's),
and talks to nothing but the pool's socket and the network a call's policy allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import sys
import traceback
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass

from saip.sandbox import wire
from saip.sandbox.isolate import Isolate
from saip.sandbox.job import Job

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker is started with (its second argument, as JSON)."""

    spares: int
    data_limit: int
    parent: int = 0  # the pool's process: the worker dies with it (0: not watched)

    def to_argument(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_argument(cls, text: str) -> WorkerSettings:
        return cls(**json.loads(text))


class Spares:
    """The isolates a worker keeps ready, and the spent ones still to close; both are tended only while idle."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._ready: deque[Isolate] = deque()
        self._spent: deque[Isolate] = deque()
        self._idle = asyncio.Event()
        self._idle.set()
        self._work = asyncio.Event()
        self._work.set()

    @property
    def ready(self) -> int:
        return len(self._ready)

    @property
    def spent(self) -> int:
        return len(self._spent)

    def fill(self) -> None:
        """Make every spare now (the worker does this once, before it says it is ready)."""
        while len(self._ready) < self._count:
            self._ready.append(Isolate.prepare())

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[Isolate]:
        """The isolate for one call: a spare, or one made now when none is ready. Tending pauses meanwhile."""
        self._idle.clear()
        try:
            isolate = self._ready.popleft() if self._ready else Isolate.prepare(warm=False)
            try:
                yield isolate
            finally:
                self._spent.append(isolate)
        finally:
            self._idle.set()
            self._work.set()

    async def tend(self) -> None:
        """Forever: close the spent isolates, then make the missing spares, one step at a time between calls (a
        call that arrives meanwhile waits for one step, a fraction of a millisecond)."""
        while True:
            await self._work.wait()
            await self._idle.wait()
            if self._spent:
                self._spent.popleft().close()
            elif len(self._ready) < self._count:
                self._ready.append(Isolate.prepare())
            else:
                self._work.clear()
            await asyncio.sleep(0)  # a job that arrived during the step is read before the next step

    def close(self) -> None:
        while self._ready:
            self._ready.popleft().close()
        while self._spent:
            self._spent.popleft().close()


async def serve(sock: socket.socket, settings: WorkerSettings) -> None:
    """Answer the pool's jobs, one at a time, until it closes the socket."""
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    spares = Spares(settings.spares)
    spares.fill()
    await wire.send(writer, {"ready": True})
    tending = asyncio.create_task(spares.tend(), name="sandbox-spares")
    tending.add_done_callback(_end_if_failed)
    try:
        while (message := await wire.receive(reader)) is not None:
            async with spares.call() as isolate:
                outcome = await isolate.run(Job.from_wire(message["job"]))
                # Answered before the spent isolate is closed or the next one made: neither is on the call's path.
                await wire.send(writer, {"outcome": outcome.to_wire()})
    finally:
        tending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await tending
        spares.close()
        writer.close()


def _end_if_failed(tending: asyncio.Task[None]) -> None:
    """A worker that cannot make isolates any more ends (its error on stderr, in the service's log); the pool starts
    another instead of letting every later call wait for an isolate made on its path."""
    if not tending.cancelled() and (error := tending.exception()) is not None:
        traceback.print_exception(error, file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)


def limit_data(data_limit: int) -> None:
    """Cap this process's data segment: a backstop beyond each call's memory budget, for the worker's own memory."""
    if data_limit > 0:
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))


def die_with_parent(parent: int) -> None:
    """Be killed when the service that started this worker ends, however it ends: the worker runs in a session of its
    own, so its parent's process group is not its own, and a worker whose parent is gone must not live on (one busy in
    a call would not see its socket close until the call ends). Linux's PR_SET_PDEATHSIG, which follows the thread
    that forked the worker: the pool's, the service's event loop, which lives as long as the service. A parent
    already gone ends it now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # it ended between the fork and the prctl: nobody would send the signal
        os._exit(0)


def main() -> None:
    fd, settings = int(sys.argv[1]), WorkerSettings.from_argument(sys.argv[2])
    if settings.parent:
        die_with_parent(settings.parent)
    limit_data(settings.data_limit)
    asyncio.run(serve(socket.socket(fileno=fd), settings))


if __name__ == "__main__":
    main()
