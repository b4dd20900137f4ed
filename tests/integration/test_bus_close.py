"""`bus.close` of a real nats-py connection whose server stopped answering (the process stopped, its socket open):
bounded, and nothing left for asyncio to log as an ERROR afterwards."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from typing import Any

import anyio
import pytest

from saip.common import bus
from saip.common.natsd import LocalNats

pytestmark = pytest.mark.integration

GRACE = 0.3


async def _ignored(message: Any) -> None:
    return None


async def test_a_drain_given_up_on_a_silent_server_leaves_no_error_for_asyncio_to_log(nats_server: LocalNats) -> None:
    loop = asyncio.get_running_loop()
    logged: list[str] = []
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: logged.append(str(context.get("message"))))
    assert nats_server.process is not None
    try:
        nc = await bus.connect(nats_server.url, "silent", within=10, grace=GRACE)
        for subject in ("saip.a", "saip.b", "saip.c"):  # what a service holds: subscriptions, drained first
            await nc.subscribe(subject, cb=_ignored)
        os.kill(nats_server.process.pid, signal.SIGSTOP)
        try:
            with anyio.fail_after(bus.closes_within(GRACE) + 5):
                await bus.close(nc, within=GRACE)
        finally:
            os.kill(nats_server.process.pid, signal.SIGCONT)
        for _ in range(3):  # what the drain left behind is collected, and logged if nobody read its error
            await asyncio.sleep(0)
            gc.collect()
    finally:
        loop.set_exception_handler(before)
    assert nc.is_closed
    assert logged == []
