"""Running a service: its lifespan opens everything (on one AsyncExitStack, background work in one anyio task group),
serves until SIGTERM or SIGINT or a background fault, and closes everything in reverse.

    @asynccontextmanager
    async def lifespan(settings: XSettings, *, registry=REGISTRY) -> AsyncIterator[Running]:
        async with AsyncExitStack() as stack:
            nc = await stack.enter_async_context(bus.connection(...))   # every resource is entered on the stack
            group = await lifecycle.background(stack)                    # background work runs in one group
            group.start_soon(keep_alive, ...)
            served = await stack.enter_async_context(grpc_server.endpoints(...))  # last in, first out: drains first
            yield Running(...)

    lifecycle.main(XSettings, lifespan)                                  # __main__.py: settings, logs, run
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup

from saip.common import logs
from saip.common.settings import ConfigurationError, SaipSettings

logger = logging.getLogger(__name__)

CANCEL_WITHIN = 0.5  # seconds a cancelled task gets to end (one that takes the cancellation ends at its next await)
CANCEL_POLL = 0.05  # seconds between the cancellations of a task that took one for a normal end

Lifespan = Callable[[], AbstractAsyncContextManager[object]]
S = TypeVar("S", bound=SaipSettings)


def main(
    settings: type[S],
    lifespan: Callable[[S], AbstractAsyncContextManager[object]],
    *,
    expected: tuple[type[BaseException], ...] = (OSError,),
) -> None:
    """A service's `python -m saip.<service>`: load its settings (a configuration that cannot be used ends the process
    with its sentence, before anything is opened), set up the JSON logs, then `run` its lifespan."""
    try:
        loaded = settings.load()
    except ConfigurationError as exc:
        sys.exit(str(exc))
    logs.setup(settings.service, loaded.log_level)
    run(settings.service, functools.partial(lifespan, loaded), expected=expected)


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


async def background(stack: AsyncExitStack) -> TaskGroup:
    """The task group of a lifespan's background work, entered on its exit stack: what is entered after it (the gRPC
    API) closes first, while the background work still runs, then the group is cancelled. A task that fails cancels
    the lifespan, which `serve` reports as a background fault."""
    group = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(group.cancel_scope.cancel)
    return group


async def cancelled(task: asyncio.Future[Any], *, within: float = CANCEL_WITHIN) -> None:
    """Cancel `task` until it ends, for at most `within` seconds; what it raises on its way out is dropped (a step of
    a stop that goes on without it). A task in nats-py code may take a cancellation for a normal end and go on
    awaiting the server (its drain does, then flushes for up to 10 s), so one `cancel()` is not enough, and awaiting
    the task after it would be as unbounded as what it awaits."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not task.done() and (left := deadline - loop.time()) > 0:
        task.cancel()
        await asyncio.wait({task}, timeout=min(left, CANCEL_POLL))
    if task.done() and not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
    elif not task.done():
        logger.warning("a task did not end when cancelled; the stop goes on without it", extra={"task": repr(task)})


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
