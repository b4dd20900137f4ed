"""A watch kept alive: restarted after a failure with a growing, jittered pause, and at once when asked."""

from __future__ import annotations

import itertools
import logging

import anyio
import pytest

from saip.common.watch import Restarts, keep_alive
from tests.waiting import eventually


async def test_a_failing_watch_is_restarted_with_a_growing_pause() -> None:
    starts: list[float] = []

    async def follow() -> None:
        starts.append(anyio.current_time())
        raise ConnectionError("nats went away")

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: keep_alive(follow, "test", initial=0.05, maximum=1.0))
        await eventually(lambda: len(starts) >= 4, within=10)
        group.cancel_scope.cancel()
    pauses = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert pauses[0] >= 0.05
    assert pauses[2] > pauses[0]  # exponential: 0.05, 0.1, 0.2 (+ jitter up to 0.05)


async def test_a_watch_that_ends_by_itself_counts_as_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    runs = 0

    async def follow() -> None:
        nonlocal runs
        runs += 1

    caplog.set_level(logging.WARNING, logger="saip.common.watch")
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: keep_alive(follow, "test", initial=0.01, maximum=0.05))
        await eventually(lambda: runs >= 3)
        group.cancel_scope.cancel()
    failures = [record for record in caplog.records if record.getMessage() == "watch failed; restarting it"]
    assert failures and "the test watch ended" in failures[0].__dict__["error"]


async def test_a_restart_starts_the_watch_over_at_once() -> None:
    restarts = Restarts()
    started: list[int] = []
    cancelled = anyio.Event()

    async def follow() -> None:
        started.append(len(started))
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: keep_alive(follow, "test", restarts=restarts, initial=30, maximum=30))
        await eventually(lambda: started == [0])
        restarts.now()
        await eventually(lambda: started == [0, 1], within=2)  # no backoff: the 30 s pause never applies
        assert cancelled.is_set()
        group.cancel_scope.cancel()


async def test_cancelling_the_keeper_cancels_the_watch() -> None:
    inside = anyio.Event()
    left = anyio.Event()

    async def follow() -> None:
        inside.set()
        try:
            await anyio.sleep_forever()
        finally:
            left.set()

    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.5):
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: keep_alive(follow, "test"))
                await inside.wait()
                await anyio.sleep_forever()
    assert left.is_set()
