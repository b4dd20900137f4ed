"""Closing a service's NATS connection ends within its bound, whatever the server does: a drain that NATS never
answers is cut short, and the close after it too."""

from __future__ import annotations

import asyncio
import contextlib

import anyio

from saip.common import bus


class UnansweredNats:
    """A connected client whose server stopped answering, with nats-py's drain: a cancellation of the drain is taken
    for its end, after which it flushes (waits for a PONG that never comes) in its `finally`; its close waits too."""

    def __init__(self) -> None:
        self.is_closed = False
        self.is_connected = True
        self.closes = 0
        self.pong = asyncio.Event()

    async def drain(self) -> None:
        try:
            # nats-py takes a cancellation here for the drain's end (it catches CancelledError and carries on)...
            with contextlib.suppress(asyncio.CancelledError):
                await self.pong.wait()  # each subscription's flush
        finally:
            await self.pong.wait()  # ...and then flushes in its `finally`

    async def close(self) -> None:
        self.closes += 1
        await self.pong.wait()  # the transport's close, waiting for its buffer to be read


async def test_a_close_ends_within_its_bound_when_nats_answers_nothing() -> None:
    nc = UnansweredNats()
    with anyio.fail_after(bus.closes_within(0.05) + 5):
        await bus.close(nc, within=0.05)  # type: ignore[arg-type]
    assert nc.closes == 1  # the drain given up, the close tried once
