"""Running a service: its lifespan opens everything (on one AsyncExitStack, background work in one anyio task group),
serves until SIGTERM or SIGINT or a background fault, and closes everything in reverse.

    @asynccontextmanager
    async def lifespan(settings) -> AsyncIterator[App]:
        async with AsyncExitStack() as stack, anyio.create_task_group() as group:
            nc = await stack.enter_async_context(bus.connection(...))
            ...                                  # every resource is entered on the stack
            group.start_soon(keep_alive, ...)    # every background task runs in the group
            yield app
            group.cancel_scope.cancel()

    lifecycle.run("tools", lambda: lifespan(settings))      # __main__.py
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio

logger = logging.getLogger(__name__)

Lifespan = Callable[[], AbstractAsyncContextManager[object]]


def run(service: str, lifespan: Lifespan, *, expected: tuple[type[BaseException], ...] = (OSError,)) -> None:
    """`python -m saip.<service>`: serve until SIGTERM or SIGINT; exit 1 when it cannot start or a fault stops it."""
    anyio.run(functools.partial(serve, service, lifespan, expected=expected))


async def serve(
    service: str,
    lifespan: Lifespan,
    *,
    expected: tuple[type[BaseException], ...] = (OSError,),
    stop: anyio.Event | None = None,
) -> None:
    """Open the lifespan and serve until `stop` is set (SIGTERM or SIGINT set it when no event is given).

    A start failure of an `expected` kind (NATS away, a port taken) is one log line and exit code 1, without a
    traceback; a background fault while serving is logged with its traceback and stops the service with exit code 1.
    """
    listen = stop is None
    stopping = stop or anyio.Event()
    started = False
    try:
        async with anyio.create_task_group() as group:
            if listen:
                group.start_soon(_signals, stopping)
            async with lifespan():
                started = True
                logger.info(f"{service} ready")
                await stopping.wait()
            group.cancel_scope.cancel()
    except Exception as exc:  # the service's outermost edge: every fault ends here, said once
        cause = first_cause(exc)
        if not started and isinstance(cause, expected):
            logger.error(f"{service} cannot start", extra={"error": str(cause) or type(cause).__name__})
        elif started:
            logger.error(f"{service} background task failed; stopping", exc_info=cause)
        else:
            logger.error(f"{service} failed to start", exc_info=cause)
        raise SystemExit(1) from None
    logger.info(f"{service} stopped")


async def _signals(stopping: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
        async for _ in received:
            stopping.set()
            return


def first_cause(exc: BaseException) -> BaseException:
    """The error inside the exception groups anyio's task groups wrap it in (the first one, when there are several)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


# The start/stop model the services used before the lifespan model above; removed once each service has a lifespan
# (issue 9).


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


def run_app(main: Callable[[Shutdown], Coroutine[Any, Any, None]]) -> None:
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


async def serve_app(
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
