"""Running a service until SIGTERM or SIGINT (or a background fault), then letting it drain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

logger = logging.getLogger(__name__)


class Shutdown:
    """Set by SIGTERM or SIGINT; a service's main coroutine waits on it, then closes what it opened."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.event.set)

    async def wait(self) -> None:
        await self.event.wait()


def run(main: Callable[[Shutdown], Coroutine[Any, Any, None]]) -> None:
    async def _main() -> None:
        shutdown = Shutdown()
        shutdown.install()
        await main(shutdown)

    asyncio.run(_main())


class App(Protocol):
    """A service process: `start` opens everything (or raises), `stop` closes what was opened, in reverse."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def failure(self) -> BaseException | None:
        """Returns when a background task ends, which only a fault does."""
        ...


async def first_failure(tasks: Sequence[asyncio.Task[None]]) -> BaseException | None:
    """What ended the first of the background tasks to end; waits forever when there are none."""
    if not tasks:
        await asyncio.Event().wait()
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    task = done.pop()
    if task.cancelled():
        return asyncio.CancelledError(task.get_name())
    return task.exception() or RuntimeError(f"{task.get_name()} ended")


async def cancel_all(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def serve(
    app: App, shutdown: Shutdown, service: str, *, expected: tuple[type[BaseException], ...] = (OSError,)
) -> None:
    """Start the app and serve until SIGTERM or SIGINT. A start failure of an `expected` kind (NATS away, a port
    taken) is one log line and exit code 1, without a traceback; a background fault stops the service with exit 1."""
    try:
        await app.start()
    except BaseException as exc:
        said = isinstance(exc, expected)
        if said:
            logger.error(f"{service} cannot start", extra={"error": str(exc) or type(exc).__name__})
        await app.stop()
        if said:
            raise SystemExit(1) from None
        raise
    stopping = asyncio.create_task(shutdown.wait())
    failing = asyncio.create_task(app.failure())
    await asyncio.wait([stopping, failing], return_when=asyncio.FIRST_COMPLETED)
    fault = failing.result() if failing.done() else None
    failing.cancel()
    stopping.cancel()
    if fault is not None:
        logger.error(f"{service} background task failed; stopping", exc_info=fault)
    await app.stop()
    if fault is not None:
        raise SystemExit(1)
