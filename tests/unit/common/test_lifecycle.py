"""A service's lifespan: opened, served until stopped, closed in reverse; start failures and faults exit 1."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest

from saip.common.lifecycle import CANCEL_WITHIN, background, cancelled, first_cause, serve
from tests.waiting import eventually


async def test_the_lifespan_is_opened_served_and_closed() -> None:
    steps: list[str] = []
    stop = anyio.Event()

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        steps.append("open")
        try:
            yield
        finally:
            steps.append("close")

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: serve("test", lifespan, stop=stop))
        await eventually(lambda: steps)  # opened; served until stopped
        assert steps == ["open"]
        stop.set()
    assert steps == ["open", "close"]


async def test_an_expected_start_failure_is_one_line_and_exit_1(caplog: pytest.LogCaptureFixture) -> None:
    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        raise OSError("port 50051 is taken")
        yield

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as exited:
        await serve("test", lifespan, stop=anyio.Event())
    assert exited.value.code == 1
    [record] = caplog.records
    assert record.getMessage() == "test cannot start" and record.exc_info is None
    assert record.__dict__["error"] == "port 50051 is taken"


async def test_a_background_fault_closes_the_lifespan_and_exits_1(caplog: pytest.LogCaptureFixture) -> None:
    closed, serving = anyio.Event(), anyio.Event()

    async def fails() -> None:
        await serving.wait()  # a fault while the service serves, not one of its start
        raise RuntimeError("the watch broke")

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            group.start_soon(fails)
            try:
                serving.set()
                yield
            finally:
                closed.set()

    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit):
        await serve("test", lifespan, stop=anyio.Event())
    assert closed.is_set()
    assert "test background task failed; stopping" in caplog.text


def test_the_first_cause_is_found_inside_nested_groups() -> None:
    inner = ValueError("x")
    assert first_cause(ExceptionGroup("a", [ExceptionGroup("b", [inner])])) is inner


async def test_what_is_entered_after_the_background_closes_first_while_the_background_still_runs() -> None:
    closed: list[str] = []
    running = anyio.Event()

    async def work() -> None:
        running.set()
        try:
            await anyio.sleep_forever()
        finally:
            closed.append("background")

    async with AsyncExitStack() as stack:
        group = await background(stack)
        group.start_soon(work)
        await running.wait()
        stack.callback(closed.append, "api")  # the gRPC API: entered last, drained first
    assert closed == ["api", "background"]


async def test_a_task_that_takes_a_cancellation_for_its_end_is_cancelled_again_until_it_ends() -> None:
    never = asyncio.Event()
    steps: list[str] = []

    async def stubborn() -> None:  # as nats-py's drain: the first cancellation ends a wait, the next await goes on
        try:
            await never.wait()
        except asyncio.CancelledError:
            steps.append("took the cancellation")
        await never.wait()

    task = asyncio.ensure_future(stubborn())
    await asyncio.sleep(0)
    await cancelled(task)
    assert task.cancelled() and steps == ["took the cancellation"]


async def test_a_task_that_never_ends_is_left_once_the_bound_is_over(caplog: pytest.LogCaptureFixture) -> None:
    release = asyncio.Event()

    async def deaf() -> None:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await release.wait()

    task = asyncio.ensure_future(deaf())
    await asyncio.sleep(0)
    with anyio.fail_after(CANCEL_WITHIN + 5):
        await cancelled(task, within=0.1)
    assert not task.done() and "did not end when cancelled" in caplog.text
    release.set()
    await task
