"""The sandbox: a pool of worker processes that run tool code in QuickJS, one single-use isolate per call.

Each worker keeps isolates ready before calls arrive (`saip.sandbox.worker`), and the pool hands each call to the
worker that has been idle longest, so the one that had the most time to prepare its next isolate. The pool talks to
a worker over a Unix socket in framed JSON, from the service's own event loop: no threads, no pickles.

The engine enforces the wall clock (the interpreter stops the code) and the memory cap; each worker's data segment
is capped as well, a backstop for the worker's own memory. Should a worker stop answering anyway, the pool kills it
once the wall clock and a grace period have passed and starts a new one, so a runaway tool costs one worker for a
moment, never the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Sequence

from saip.common import processes
from saip.common.netguard import Binding
from saip.sandbox import wire
from saip.sandbox.errors import SandboxUnavailable
from saip.sandbox.job import TIME_LIMIT, WORKER_CRASHED, Job, Limits, Outcome
from saip.sandbox.worker import WorkerSettings

logger = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
START_WITHIN = 60.0
# Room above a call's memory cap for the Python interpreter and the worker's own structures; and for each spare
# isolate (a QuickJS runtime with the runtime evaluated holds about 0.2 MiB).
DATA_HEADROOM = 256 * 1024 * 1024
SPARE_HEADROOM = 1024 * 1024
WORKER_COMMAND = (sys.executable, "-m", "saip.sandbox.worker")


class _WorkerGone(Exception):
    """The worker's socket closed before it answered: the process ended."""


class _NotDelivered(_WorkerGone):
    """The worker had ended before the job reached it: the job can go to another."""


class _Worker:
    """One worker process and its socket; `ready` is done once it has made its spares and said so."""

    def __init__(self, command: Sequence[str], settings: WorkerSettings) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.ready = asyncio.ensure_future(self._start(command, settings))

    async def _start(self, command: Sequence[str], settings: WorkerSettings) -> None:
        ours, theirs = socket.socketpair()
        try:
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *command,
                    str(theirs.fileno()),
                    settings.to_argument(),
                    pass_fds=(theirs.fileno(),),
                    stdin=asyncio.subprocess.DEVNULL,
                    # Its own session: a signal to the service's process group (`saip run`'s stop) is the service's
                    # to act on, which closes the pool; the worker dies with the service in any case (worker.py).
                    start_new_session=True,
                )
            finally:
                theirs.close()
            self._reader, self._writer = await asyncio.open_unix_connection(sock=ours)
        except BaseException:
            ours.close()  # not handed to a transport yet
            raise
        try:
            hello = await asyncio.wait_for(wire.receive(self._reader), START_WITHIN)
        except TimeoutError:
            hello = None
            self.kill()
        if hello != {"ready": True}:
            code = await self.exit_code()
            self.kill()
            if code is not None and code < 0:  # a signal's: something ended it, the engine did not fail
                how = f"{processes.ended(code)} before it was ready"
            else:
                how = f"did not start (exit code {code}): it could not load its JavaScript engine here"
            raise SandboxUnavailable(
                f"A sandbox worker process {how}. Try again; if it happens again, the service's log says why."
            )

    @property
    def alive(self) -> bool:
        """Started, and neither its process nor its socket has ended since."""
        if not self.ready.done() or self.ready.cancelled() or self.ready.exception() is not None:
            return False
        ended = self._reader is None or self._reader.at_eof()
        return not ended and self.process is not None and self.process.returncode is None

    async def call(self, job: Job) -> Outcome:
        """The job's outcome."""
        if self._reader is None or self._writer is None:
            raise _NotDelivered
        try:
            await wire.send(self._writer, {"job": job.to_wire()})
        except ConnectionError:
            raise _NotDelivered from None
        answer = await wire.receive(self._reader)
        if answer is None:
            raise _WorkerGone
        try:
            return Outcome.from_wire(answer["outcome"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise wire.WireError(f"a worker's answer is not an outcome ({exc!r})") from None

    async def exit_code(self) -> int | None:
        if self.process is None:
            return None
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self.process.wait(), GRACE_SECONDS)
        return None

    def kill(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self.process is not None and self.process.returncode is None:
            self.process.kill()

    async def close(self) -> None:
        self.ready.cancel()
        with contextlib.suppress(asyncio.CancelledError, SandboxUnavailable, OSError):
            await self.ready
        self.kill()
        await self.exit_code()


class Sandbox:
    """Runs jobs on `workers` processes, each keeping `spares` isolates ready; `run` never raises for what the code
    does, only returns an Outcome."""

    def __init__(
        self, workers: int, limits: Limits, *, spares: int = 1, command: Sequence[str] = WORKER_COMMAND
    ) -> None:
        self.limits = limits
        self.workers = workers
        self.spares = spares
        self._command = tuple(command)
        self._settings = WorkerSettings(
            spares=spares,
            data_limit=limits.memory_bytes + DATA_HEADROOM + spares * SPARE_HEADROOM,
            parent=os.getpid(),
        )
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: set[_Worker] = set()
        self._reaping: set[asyncio.Future[None]] = set()

    def job(
        self,
        code: str,
        arguments: dict[str, object],
        statics: dict[str, str],
        *,
        network_mode: str,
        hosts_allow: tuple[str, ...],
        secrets: tuple[Binding, ...] = (),
    ) -> Job:
        return Job(
            code=code,
            arguments=dict(arguments),
            statics=dict(statics),
            network_mode=network_mode,
            hosts_allow=hosts_allow,
            secrets=secrets,
            timeout=self.limits.timeout,
            memory_bytes=self.limits.memory_bytes,
            console_cap=self.limits.console_cap,
            max_result_chars=self.limits.max_result_chars,
        )

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers started so far (for logs, and for tests that end one)."""
        return sorted(worker.process.pid for worker in self._all if worker.process is not None)

    def _spawn(self) -> _Worker:
        worker = _Worker(self._command, self._settings)
        self._all.add(worker)
        return worker

    def _pool(self) -> asyncio.Queue[_Worker]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.workers):
                self._idle.put_nowait(self._spawn())
        return self._idle

    def _replace(self, worker: _Worker) -> _Worker:
        """Kill a worker that is gone or stuck (reaped in the background) and start another in its place."""
        worker.kill()
        self._all.discard(worker)
        reaping = asyncio.ensure_future(worker.close())
        self._reaping.add(reaping)
        reaping.add_done_callback(self._reaping.discard)
        return self._spawn()

    async def warm(self) -> None:
        """Start every worker and wait until each has its spares ready, so the first calls do not pay for it."""
        self._pool()
        await asyncio.gather(*(worker.ready for worker in list(self._all)))

    async def run(self, job: Job) -> Outcome:
        idle = self._pool()
        worker = await idle.get()  # the one idle longest: it had the most time to make its spares
        try:
            if worker.ready.done() and not worker.alive:
                worker = self._replace(worker)  # it ended while idle, or never started
            try:
                await worker.ready
            except SandboxUnavailable:
                worker = self._replace(worker)
                raise
            try:
                outcome, healthy = await self._exchange(worker, job)
            except _NotDelivered:
                # It ended while idle and nobody noticed yet: the job never reached it, so another worker takes it.
                worker = self._replace(worker)
                await worker.ready
                outcome, healthy = await self._exchange(worker, job)
            if not healthy:
                worker = self._replace(worker)
            return outcome
        finally:
            idle.put_nowait(worker)

    async def _exchange(self, worker: _Worker, job: Job) -> tuple[Outcome, bool]:
        """The job's outcome, and whether the worker can take the next one."""
        try:
            async with asyncio.timeout(job.timeout + GRACE_SECONDS):
                outcome = await worker.call(job)
        except _NotDelivered:
            raise
        except TimeoutError:
            logger.warning("sandbox worker did not stop at the wall clock; killing it")
            message = f"The code did not stop at the {job.timeout:g} s wall-clock limit; its worker process was killed."
            return Outcome(ok=False, error=message, guard_blocks=[(TIME_LIMIT, message)]), False
        except (_WorkerGone, wire.WireError, OSError):
            # Its exit status first: a kill now would reap the process before asyncio's watcher reads the status
            # (one still running after the grace is killed when it is replaced).
            code = await worker.exit_code()
            logger.warning("sandbox worker died", extra={"exitcode": code})
            message = (
                f"The sandbox worker running the code ended abruptly (exit code {code}), most likely out of "
                "memory; the code was stopped. Use less memory."
            )
            return Outcome(ok=False, error=message, guard_blocks=[(WORKER_CRASHED, message)]), False
        return outcome, True

    async def close(self) -> None:
        """Stop every worker (they hold nothing to drain: a call in flight is the caller's to wait for)."""
        workers, self._all = list(self._all), set()
        await asyncio.gather(*(worker.close() for worker in workers), *self._reaping)
        self._idle = None
