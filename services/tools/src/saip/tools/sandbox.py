"""The sandbox: a pool of worker processes that run tool code in V8, one fresh context per call.

V8 enforces the wall clock (the run is terminated) and the heap cap; each worker's data segment is capped as well,
for memory outside the heap. Should a worker stop answering anyway, the pool kills it once the wall clock and a
grace period have passed and starts a new one, so a runaway tool costs one worker for a moment, never the service.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from pebble import ProcessExpired, ProcessPool

from saip.tools import worker
from saip.tools.errors import SandboxUnavailable
from saip.tools.worker import Job, Outcome

logger = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
# Room above the heap cap for the interpreter, V8's own structures and array buffers.
DATA_HEADROOM = 640 * 1024 * 1024
WORKER_CRASHED = "worker-crashed"


@dataclass(frozen=True)
class Limits:
    timeout: float = 30.0
    memory_bytes: int = 128 * 1024 * 1024
    console_cap: int = 1000
    max_result_chars: int = 1_000_000


class Sandbox:
    """Runs jobs on `workers` processes; `run` never raises for what the code does, only returns an Outcome."""

    def __init__(
        self, workers: int, limits: Limits, *, initializer: Callable[[int], None] = worker.init_worker
    ) -> None:
        self.limits = limits
        self.workers = workers
        self._initializer = initializer
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPool:
        return ProcessPool(
            max_workers=self.workers,
            initializer=self._initializer,
            initargs=(self.limits.memory_bytes + DATA_HEADROOM,),
            context=multiprocessing.get_context("spawn"),
        )

    def job(
        self,
        code: str,
        arguments: dict[str, object],
        statics: dict[str, str],
        *,
        network_mode: str,
        hosts_allow: tuple[str, ...],
    ) -> Job:
        return Job(
            code=code,
            arguments=dict(arguments),
            statics=dict(statics),
            network_mode=network_mode,
            hosts_allow=hosts_allow,
            timeout=self.limits.timeout,
            memory_bytes=self.limits.memory_bytes,
            console_cap=self.limits.console_cap,
            max_result_chars=self.limits.max_result_chars,
        )

    async def run(self, job: Job) -> Outcome:
        try:
            future = self._pool.schedule(worker.run_job, args=(job,), timeout=job.timeout + GRACE_SECONDS)
            return await asyncio.wrap_future(future)
        except BrokenProcessPool as exc:
            # Every worker died before it could take work (it cannot start V8 here): start a new pool for the next
            # call, and say so instead of failing with an internal error.
            logger.error("sandbox pool broken; starting a new one", extra={"error": str(exc)})
            self.close()
            self._pool = self._new_pool()
            raise SandboxUnavailable(
                "The sandbox's worker processes could not run the code (they stopped while starting); the service "
                "restarted them. Try again; if it happens again, the tools service's log says why."
            ) from None
        except TimeoutError:
            message = f"The code did not stop at the {job.timeout:g} s wall-clock limit; its worker process was killed."
            return Outcome(ok=False, error=message, guard_blocks=[(worker.TIME_LIMIT, message)])
        except ProcessExpired as exc:
            logger.warning("sandbox worker died", extra={"exitcode": exc.exitcode})
            message = (
                f"The sandbox worker running the code ended abruptly (exit code {exc.exitcode}), most likely out of "
                "memory; the code was stopped. Use less memory."
            )
            return Outcome(ok=False, error=message, guard_blocks=[(WORKER_CRASHED, message)])

    async def warm(self) -> None:
        """Start every worker and load V8 in it, so the first real call does not pay for it."""
        jobs = [self.job("return 1", {}, {}, network_mode="blocked", hosts_allow=()) for _ in range(self.workers)]
        await asyncio.gather(*(self.run(job) for job in jobs))

    def close(self) -> None:
        self._pool.stop()  # type: ignore[no-untyped-call]
        self._pool.join(timeout=GRACE_SECONDS)
