"""Keeping a watch (a bucket watch, a stream consumer, a listing loop) alive for a service's life.

A watch that fails, or ends by itself, is started again after an exponential backoff with jitter, so a flapping NATS
is not hammered by every replica at once; one that ran healthily for a while starts over at once. A NATS reconnect
restarts every watch at once (`Restarts.now`): changes may have happened while it was away.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential_jitter

logger = logging.getLogger(__name__)

INITIAL_BACKOFF = 0.1
MAX_BACKOFF = 10.0
HEALTHY_AFTER = 30.0


class WatchEnded(Exception):
    """The watch returned by itself (its iterator ended), which a watch meant to run forever does only on a fault."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the {what} watch ended")


class Applied:
    """How far a watch has applied its bucket (the stream sequence of the last change it showed), and a wait until it
    has shown a given write: the read-your-writes of a snapshot kept by a watch."""

    def __init__(self) -> None:
        self.revision = 0
        self._moved = anyio.Event()

    def advance(self, revision: int) -> None:
        """The watch has shown everything up to `revision` (it never goes back); wakes every waiter."""
        self.revision = max(self.revision, revision)
        self._moved.set()
        self._moved = anyio.Event()

    async def reached(self, revision: int, within: float) -> bool:
        """Whether the watch showed `revision` within `within` seconds."""
        with anyio.move_on_after(within):
            while self.revision < revision:
                await self._moved.wait()
            return True
        return False


class Restarts:
    """Restart every watch kept alive with it at once (call `now` from the NATS reconnect callback)."""

    def __init__(self) -> None:
        self._pending: set[anyio.Event] = set()

    def now(self) -> None:
        for event in list(self._pending):
            event.set()

    async def reconnected(self) -> None:
        """The NATS client's reconnected callback (`bus.connection(..., reconnected=restarts.reconnected)`)."""
        self.now()

    def _join(self, event: anyio.Event) -> None:
        self._pending.add(event)

    def _leave(self, event: anyio.Event) -> None:
        self._pending.discard(event)


async def keep_alive(
    follow: Callable[[], Awaitable[None]],
    what: str,
    *,
    restarts: Restarts | None = None,
    initial: float = INITIAL_BACKOFF,
    maximum: float = MAX_BACKOFF,
    healthy_after: float = HEALTHY_AFTER,
) -> None:
    """Run `follow()` until cancelled: again after a failure (backoff with jitter) and at once after a restart."""

    def said(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        pause = state.next_action.sleep if state.next_action is not None else 0.0
        logger.warning(
            "watch failed; restarting it",
            extra={"watch": what, "error": repr(error), "attempt": state.attempt_number, "backoff_s": round(pause, 2)},
        )

    while True:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(Exception),
            wait=wait_exponential_jitter(multiplier=initial, max=maximum, jitter=initial),
            before_sleep=said,
        ):
            with attempt:
                await _once(follow, what, restarts, healthy_after)


async def _once(
    follow: Callable[[], Awaitable[None]], what: str, restarts: Restarts | None, healthy_after: float
) -> None:
    """One run: returns when a restart was asked for (or the watch ran healthily before it stopped), raises when the
    watch failed or ended soon after starting."""
    again = anyio.Event()
    ended: list[Exception] = []
    started = anyio.current_time()
    if restarts is not None:
        restarts._join(again)
    try:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                try:
                    await follow()
                    ended.append(WatchEnded(what))
                except Exception as exc:  # the watch's fault, whatever it is, is what the backoff is for
                    ended.append(exc)
                again.set()

            group.start_soon(watch)
            await again.wait()
            group.cancel_scope.cancel()
    finally:
        if restarts is not None:
            restarts._leave(again)
    if not ended:
        return
    if anyio.current_time() - started >= healthy_after:
        logger.warning("watch stopped after running; restarting it", extra={"watch": what, "error": repr(ended[0])})
        return
    raise ended[0]
