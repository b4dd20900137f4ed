"""A worker's spares: isolates made before calls arrive, spent ones closed and replaced while it waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from saip.sandbox.job import Job
from saip.sandbox.worker import Spares
from tests.waiting import eventually

JOB = Job(code="return globalThis.marker = (globalThis.marker ?? 0) + 1", arguments={}, statics={})


@contextlib.asynccontextmanager
async def tended(spares: Spares) -> AsyncIterator[Spares]:
    tending = asyncio.create_task(spares.tend())
    try:
        yield spares
    finally:
        tending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await tending
        spares.close()


async def test_a_spent_isolate_is_closed_and_the_next_one_made_while_the_worker_waits() -> None:
    spares = Spares(1)
    spares.fill()
    assert spares.ready == 1
    async with tended(spares):
        async with spares.call() as isolate:
            first = await isolate.run(JOB)
        await eventually(lambda: spares.ready == 1 and spares.spent == 0)
        async with spares.call() as isolate:
            second = await isolate.run(JOB)
    assert first.warm and second.warm
    assert first.result_json == second.result_json == "1"


async def test_a_call_that_finds_no_spare_makes_its_isolate_on_the_spot() -> None:
    spares = Spares(1)
    async with tended(spares), spares.call() as isolate:
        outcome = await isolate.run(JOB)
    assert outcome.ok and not outcome.warm
