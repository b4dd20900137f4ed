"""Two awaits at once: the answers in order, and a failure raised as the error it is (the RPC edge maps it)."""

from __future__ import annotations

import anyio
import pytest

from saip.common import concurrently


async def test_both_answers_come_back_in_order() -> None:
    started = anyio.Event()

    async def slow() -> str:
        await started.wait()  # finishes only once the other has started: the two run at once
        return "slow"

    async def quick() -> int:
        started.set()
        return 1

    assert await concurrently.both(slow, quick) == ("slow", 1)


async def test_a_failure_is_raised_as_itself_and_the_other_is_cancelled() -> None:
    cancelled = anyio.Event()

    async def waits() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async def fails() -> None:
        raise LookupError("No tool named 'x'.")

    with pytest.raises(LookupError, match="No tool named 'x'"):
        await concurrently.both(waits, fails)
    assert cancelled.is_set()
