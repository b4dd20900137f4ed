"""One proxied call over CallServedToolStream, both ways: the call comes in first, the upstream's progress and its
own questions go out as they come, each answer comes back in by the question's id, and the reply goes out last.

The SDK runs each progress callback as it arrives, possibly side by side, and a question can be out while progress
still comes: one write at a time, in order, and none after the reply (a report that arrives late is dropped). A
question waits for its answer within the call's own timeout; when the caller stops sending (its stream closed), every
question still out is cancelled. When the caller cancels the stream, gRPC cancels this coroutine, and with it the
upstream's request.

A 2026-07-28 caller answers in a new request instead: its call names `park_seconds`, and runs parked at each
question (`upstream.parking`); the stream that resumes it starts with the answer (`ServedResume`) instead of a call.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types

from saip.tools.errors import InvalidSpec
from saip.tools.upstream.parking import Parking
from saip.tools.upstream.proxy import Proxy
from saip.tools.upstream.streamed import CANCEL, Write, answer_of
from saip.v1 import common_pb2


class _Waiting:
    """One question out with the caller, until its answer comes back."""

    def __init__(self) -> None:
        self.answered = anyio.Event()
        self.answer = CANCEL


async def relayed(
    proxy: Proxy, parking: Parking, inputs: AsyncIterator[common_pb2.ServedToolInput], write: Write
) -> None:
    """Run the call the first input names, relaying its events to `write` and the later inputs' answers to it; or
    park it at its questions (`park_seconds`), or resume a parked one."""
    first = await anext(inputs, None)
    if first is not None and first.HasField("resume"):
        await parking.resume(first.resume, write)
        return
    if first is None or not first.HasField("call"):
        raise InvalidSpec(
            "A streamed call starts with the call itself (ServedToolInput.call), then sends answers; or with the "
            "answer that resumes a parked call (ServedToolInput.resume)."
        )
    if first.call.park_seconds > 0:
        await parking.call(first.call, write)
        return
    writing = anyio.Lock()
    replied = anyio.Event()
    waiting: dict[int, _Waiting] = {}
    ids = itertools.count(1)

    async def send(event: common_pb2.ServedToolEvent) -> None:
        async with writing:
            if not replied.is_set():
                await write(event)

    async def progress(done: float, total: float, message: str) -> None:
        await send(
            common_pb2.ServedToolEvent(progress=common_pb2.ServedProgress(progress=done, total=total, message=message))
        )

    async def ask(message: str, schema: dict[str, Any]) -> types.ElicitResult:
        question_id = next(ids)
        waiting[question_id] = held = _Waiting()
        question = common_pb2.ServedQuestion(
            id=question_id, message=message, requested_schema_json=json.dumps(schema, ensure_ascii=False)
        )
        try:
            await send(common_pb2.ServedToolEvent(question=question))
            await held.answered.wait()
            return held.answer
        finally:
            waiting.pop(question_id, None)

    async def answers() -> None:
        async for received in inputs:
            held = waiting.get(received.answer.id) if received.HasField("answer") else None
            if held is not None:
                held.answer = answer_of(received.answer)
                held.answered.set()
        for held in list(waiting.values()):  # the caller sends no more: nobody will answer these
            held.answered.set()

    call = first.call
    async with anyio.create_task_group() as group:
        group.start_soon(answers)
        reply = await proxy.call(call.name, call.arguments_json, progress, ask)
        group.cancel_scope.cancel()
    async with writing:
        replied.set()
        await write(common_pb2.ServedToolEvent(reply=reply))
