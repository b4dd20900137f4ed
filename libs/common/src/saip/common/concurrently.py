"""Awaiting two things at once with anyio, with the answers in order and a failure raised as itself (not wrapped in
the exception group a task group raises), so the RPC edge still sees the service's own error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from saip.common.lifecycle import first_cause

A = TypeVar("A")
B = TypeVar("B")


async def both(first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]) -> tuple[A, B]:
    """Call both and await them at once; when one fails, the other is cancelled and the failure raised."""
    answers: list[Any] = [None, None]

    async def answer(index: int, call: Callable[[], Awaitable[Any]]) -> None:
        answers[index] = await call()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(answer, 0, first)
            group.start_soon(answer, 1, second)
    except ExceptionGroup as failed:
        raise first_cause(failed) from None
    return answers[0], answers[1]
