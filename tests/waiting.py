"""Bounded waiting for state that changes in another task or process: poll, never sleep blindly."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def eventually(check: Callable[[], T | Awaitable[T]], *, within: float = 10.0, every: float = 0.02) -> T:
    """Call `check` (sync or async) until it returns something truthy and return that; fail after `within` s."""
    with anyio.fail_after(within):
        while True:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value  # type: ignore[return-value]
            await anyio.sleep(every)
