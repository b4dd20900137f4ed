"""Proxied calls parked at an upstream's question while their 2026-07-28 caller answers it in a new request.

Such a caller has no back channel: the gateway ends its request with the question, and the retry that carries the
answer is a new request, on a new CallServedToolStream. So the call runs in a task of the tools service, not of the
stream that started it: at the upstream's question it parks (the SDK's elicitation callback waits, the upstream's
request stays open), the stream that followed it ends with the question and the parked call's id, and the stream that
resumes it (`ServedResume`) hands the answer over and follows the call from there: its progress, its next question
(parked again), its reply. Proxy.call runs once from start to end, so the call is counted once.

A parked call waits `park_seconds` at most (the gateway's approval wait, `hitl.approval-wait-seconds`), and within the
call's own timeout (`tools.upstream-call-timeout-seconds`); then it is dropped: the upstream reads a cancel of its
question and of its request, and the call counts as `timeout`. At most `tools.upstream-parked-max` calls are parked on
a replica: a question beyond them ends its call with a refusal that says so (the upstream reads a cancel too). A call
whose follower goes away (the caller cancelled) is cancelled upstream.

A parked call lives on the replica that runs it, and its id names that replica (`<holder>.<secret>`): a resume that
reaches another replica is answered with a sentence saying so, at once (docs/upstream.md, "Proxying").
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from saip.common.approval_form import seconds
from saip.tools.metrics import ToolsMetrics
from saip.tools.upstream.proxy import Proxy, Stop
from saip.tools.upstream.relay import CANCEL, Write, answer_of
from saip.v1 import common_pb2

logger = logging.getLogger(__name__)

FULL = (
    "The upstream's question was not put to you: {most} calls already wait for their callers' answers on this tools "
    "replica (tools.upstream-parked-max), so this call was cancelled. Call the tool again once fewer wait."
)
EXPIRED = "Nobody answered the upstream's question within {wait} s, so the call was cancelled."
NOT_PARKED = (
    "This call no longer waits for an answer (answered already, expired, or its tools replica restarted). Call the "
    "tool again."
)
OTHER_REPLICA = (
    "This call waits on another tools replica ('{holder}'), and a resume cannot reach it from this one. Call the tool "
    "again; with one tools replica, or one gateway channel to it, this does not happen (docs/upstream.md)."
)
OTHER_TOOL = "The parked call runs '{parked}', not '{name}': answer it with the call it asked in."


@dataclass(eq=False)
class _Follower:
    """The stream following a call until it parks or replies."""

    write: Write
    done: anyio.Event = field(default_factory=anyio.Event)


class _Running:
    """One call run by the service, followed by at most one stream at a time."""

    def __init__(self, name: str, park_seconds: float) -> None:
        self.name = name
        self.park_seconds = park_seconds
        self.stop = Stop()
        self.scope = anyio.CancelScope()  # the whole call: cancelled when its follower goes away
        self.answer = CANCEL
        self.answered = anyio.Event()
        self.finished = False
        self._follower: _Follower | None = None
        self._writing = anyio.Lock()
        self._reply: common_pb2.ServedToolEvent | None = None

    def attach(self, write: Write) -> _Follower:
        self._follower = follower = _Follower(write)
        return follower

    async def emit(self, event: common_pb2.ServedToolEvent, *, last: bool = False) -> None:
        """Write to the follower, if one follows (while parked, nobody does: progress then is dropped); `last` ends
        its stream."""
        async with self._writing:
            if event.HasField("reply"):
                self._reply = event
            follower = self._follower
            if follower is None:
                return
            try:
                await follower.write(event)
            except Exception as exc:  # the follower's stream is gone; its handler is being cancelled
                logger.debug("a parked call's follower went away", extra={"error": repr(exc)})
                last = True
            if last:
                self._follower = None
                follower.done.set()

    async def follow(self, follower: _Follower) -> None:
        """Until the call parks or replies; a follower cancelled meanwhile (its caller cancelled) cancels the call."""
        try:
            await follower.done.wait()
        except anyio.get_cancelled_exc_class():
            if self._follower is follower:
                self.scope.cancel()
            raise

    async def finish(self) -> None:
        """The call ended: nobody may resume it, and a follower that attached as it ended gets its reply."""
        self.finished = True
        self.answer = CANCEL  # a 2025-11-25 upstream's question still out reads a cancel
        self.answered.set()
        if self._reply is not None and self._follower is not None:
            await self.emit(self._reply, last=True)
        elif self._follower is not None:
            self._follower.done.set()

    async def progress(self, done: float, total: float, message: str) -> None:
        await self.emit(
            common_pb2.ServedToolEvent(progress=common_pb2.ServedProgress(progress=done, total=total, message=message))
        )


class Parking:
    """The calls this replica runs for 2026-07-28 callers, and those of them parked at a question."""

    def __init__(self, proxy: Proxy, group: TaskGroup, metrics: ToolsMetrics, *, most: int) -> None:
        self.holder = secrets.token_hex(6)  # this replica, as the ids of the calls it parks name it
        self.most = most
        self._proxy = proxy
        self._group = group
        self._metrics = metrics
        self._parked: dict[str, _Running] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._parked)

    async def call(self, call: common_pb2.CallServedToolRequest, write: Write) -> None:
        """Start the call in the service's own task group, and follow it until it parks or replies."""
        running = _Running(call.name, call.park_seconds)
        follower = running.attach(write)
        self._group.start_soon(self._run, running, call)
        await running.follow(follower)

    async def resume(self, resume: common_pb2.ServedResume, write: Write) -> None:
        """Hand the answer to the call parked at its question, and follow the call from there."""
        holder, _, _ = resume.parked_id.partition(".")
        if holder != self.holder:
            refusal = OTHER_REPLICA.format(holder=holder) if holder else NOT_PARKED
            await write(_refused(refusal))
            return
        running = self._parked.get(resume.parked_id)
        if running is None:
            await write(_refused(NOT_PARKED))
            return
        if running.name != resume.name:
            await write(_refused(OTHER_TOOL.format(parked=running.name, name=resume.name)))
            return
        self._unpark(resume.parked_id)
        if resume.park_seconds > 0:
            running.park_seconds = resume.park_seconds
        follower = running.attach(write)
        running.answer = answer_of(resume.answer)
        running.answered.set()
        await running.follow(follower)

    async def _run(self, running: _Running, call: common_pb2.CallServedToolRequest) -> None:
        async def ask(message: str, schema: dict[str, Any]) -> types.ElicitResult:
            return await self._ask(running, message, schema)

        try:
            with running.scope:
                reply = await self._proxy.call(call.name, call.arguments_json, running.progress, ask, running.stop)
                await running.emit(common_pb2.ServedToolEvent(reply=reply), last=True)
        finally:
            for parked_id in [key for key, held in self._parked.items() if held is running]:
                self._unpark(parked_id)
            with anyio.CancelScope(shield=True):
                await running.finish()

    async def _ask(self, running: _Running, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        """Park the call at the upstream's question and send the question to its follower; the answer comes with the
        resume. Beyond the room there is, or past the wait, the call ends (the upstream reads a cancel)."""
        if running.finished:
            return CANCEL
        if len(self._parked) >= self.most:
            logger.warning("an upstream's question found no room to park", extra={"parked": len(self._parked)})
            running.stop.now(FULL.format(most=self.most), "refused")
            return CANCEL
        parked_id = f"{self.holder}.{secrets.token_urlsafe(18)}"
        running.answer, running.answered = CANCEL, anyio.Event()
        self._parked[parked_id] = running
        self._metrics.upstream_parked.set(len(self._parked))
        question = common_pb2.ServedQuestion(
            id=next(self._ids),
            message=message,
            requested_schema_json=json.dumps(schema, ensure_ascii=False),
            parked_id=parked_id,
        )
        try:
            await running.emit(common_pb2.ServedToolEvent(question=question), last=True)
            with anyio.move_on_after(running.park_seconds) as waiting:
                await running.answered.wait()
            if waiting.cancelled_caught:
                running.stop.now(EXPIRED.format(wait=seconds(running.park_seconds)), "timeout")
                return CANCEL
            return running.answer
        finally:
            self._unpark(parked_id)

    def _unpark(self, parked_id: str) -> None:
        if self._parked.pop(parked_id, None) is not None:
            self._metrics.upstream_parked.set(len(self._parked))


def _refused(text: str) -> common_pb2.ServedToolEvent:
    return common_pb2.ServedToolEvent(reply=common_pb2.CallServedToolReply(is_error=True, text=text))
