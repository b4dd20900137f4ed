"""Proxied calls parked at an upstream's question while their 2026-07-28 caller answers it in a new request.

Such a caller has no back channel: the gateway ends its request with the question, and the retry that carries the
answer is a new request, on a new CallServedToolStream. So the call runs in a task of the tools service, not of the
stream that started it: at the upstream's question it parks (the SDK's elicitation callback waits, the upstream's
request stays open), the stream that followed it ends with the question and the parked call's id, and the stream that
resumes it (`ServedResume`) hands the answer over and follows the call from there: its progress, its next question
(parked again), its reply. Proxy.call runs once from start to end, so the call is counted once.

A parked call waits `park_seconds` at most (the gateway's approval wait, `hitl.approval-wait-seconds`), ends by
`park_until` when the call carries one (the chat turn it belongs to ends then: the gateway counts the turn's time from
its start, this replica's wait from the question, so that moment bounds both), and within the call's own timeout
(`tools.upstream-call-timeout-seconds`); then it is dropped: the upstream reads a cancel of its
question and of its request, and the call counts as `timeout`. At most `tools.upstream-parked-max` calls are parked on
a replica: a question beyond them ends its call with a refusal that says so (the upstream reads a cancel too). A call
whose follower goes away (the caller cancelled) is cancelled upstream.

A parked call lives on the replica that runs it, and its id names that replica (`<holder>.<secret>`). A resume that
reaches another replica is forwarded to the holder on core NATS (`saip.tools.parked.<holder>`, a request the holder
acknowledges at once), and the call's events come back, in order, on an inbox of the forwarder's, which writes them to
its own stream: the gateway sees one stream either way. A holder that is gone (no responder) or goes silent (nothing
within the call's own timeout) is a clear error, never a hang. A caller's cancel of a forwarded resume is forwarded
too (`saip.tools.parked.<holder>.cancel`, naming the inbox), and the holder cancels the call upstream.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError

from saip.common import names
from saip.common.approval_sentences import seconds, within
from saip.tools.errors import ToolsError
from saip.tools.metrics import ToolsMetrics
from saip.tools.upstream.proxy import Proxy, Stop
from saip.tools.upstream.streamed import CANCEL, Write, answer_of
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
HOLDER_GONE = (
    "This call waited on tools replica '{holder}', which does not answer any more (restarted or stopped), so it no "
    "longer waits. Call the tool again."
)
HOLDER_SILENT = (
    "Tools replica '{holder}', which holds this call, sent nothing more within {wait} s; the call is dropped there. "
    "Call the tool again."
)
FAILED = "The call failed inside the tools service (its log says why); call the tool again, or ask the person to look."
ACK_WITHIN = 5.0  # seconds a holder has to take a forwarded resume
CANCEL_SUFFIX = ".cancel"  # saip.tools.parked.<holder>.cancel: the inbox of a forwarded resume whose caller cancelled
OTHER_TOOL = "The parked call runs '{parked}', not '{name}': answer it with the call it asked in."


@dataclass(eq=False)
class _Follower:
    """The stream following a call until it parks or replies."""

    write: Write
    done: anyio.Event = field(default_factory=anyio.Event)


class _Running:
    """One call run by the service, followed by at most one stream at a time."""

    def __init__(self, name: str, park_seconds: float, park_until: float) -> None:
        self.name = name
        self.park_seconds = park_seconds
        self.park_until = park_until  # wall clock; 0: none (an older gateway sends none)
        self.stop = Stop()
        self.scope = anyio.CancelScope()  # the whole call: cancelled when its follower goes away
        self.answer = CANCEL
        self.answered = anyio.Event()
        self.finished = False
        self._follower: _Follower | None = None
        self._writing = anyio.Lock()
        self._reply: common_pb2.ServedToolEvent | None = None

    def wait(self) -> tuple[float, str]:
        """How long a question may park the call from now, and that wait as the expiry sentence says it: the wait the
        gateway sent, or less when the call's `park_until` comes sooner (in whole seconds rounded up, so it stays
        true)."""
        if self.park_until <= 0:
            return self.park_seconds, seconds(self.park_seconds)
        wait = min(self.park_seconds, max(0.0, self.park_until - time.time()))
        return wait, within(wait, self.park_seconds)

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

    def __init__(
        self,
        proxy: Proxy,
        group: TaskGroup,
        metrics: ToolsMetrics,
        *,
        most: int,
        within: float,
        nc: NatsClient | None = None,
    ) -> None:
        """`within`: the call's own timeout, the longest a forwarded resume waits for the holder's next event; `nc`:
        the bus resumes of other replicas' calls are forwarded on (None: they are refused)."""
        self.holder = secrets.token_hex(6)  # this replica, as the ids of the calls it parks name it
        self.most = most
        self._proxy = proxy
        self._group = group
        self._metrics = metrics
        self._within = within
        self._nc = nc
        self._forwarding: dict[str, anyio.CancelScope] = {}  # the resumes other replicas forwarded, by their inbox
        self._parked: dict[str, _Running] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._parked)

    async def call(self, call: common_pb2.CallServedToolRequest, write: Write) -> None:
        """Start the call in the service's own task group, and follow it until it parks or replies."""
        running = _Running(call.name, call.park_seconds, call.park_until)
        follower = running.attach(write)
        self._group.start_soon(self._run, running, call)
        await running.follow(follower)

    async def resume(self, resume: common_pb2.ServedResume, write: Write) -> None:
        """Hand the answer to the call parked at its question, and follow the call from there."""
        holder, _, _ = resume.parked_id.partition(".")
        if holder != self.holder:
            if holder and self._nc is not None:
                await self._forward(self._nc, holder, resume, write)
            else:
                await write(_refused(NOT_PARKED))
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
            running.park_seconds, running.park_until = resume.park_seconds, resume.park_until
        follower = running.attach(write)
        running.answer = answer_of(resume.answer)
        running.answered.set()
        await running.follow(follower)

    async def serve(self) -> None:
        """Take the resumes other replicas forward to this one's parked calls, until cancelled."""
        if self._nc is None:
            return
        subject = names.PARKED_PREFIX + self.holder
        taken = await self._nc.subscribe(subject, cb=self._forwarded)
        cancels = await self._nc.subscribe(subject + CANCEL_SUFFIX, cb=self._cancelled)
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await taken.unsubscribe()
                await cancels.unsubscribe()

    async def _cancelled(self, msg: Msg) -> None:
        """The caller of a forwarded resume cancelled: so is the resume here, and with it the call upstream."""
        scope = self._forwarding.get(msg.data.decode(errors="replace"))
        if scope is not None:
            scope.cancel()

    async def _forwarded(self, msg: Msg) -> None:
        """A resume another replica received: acknowledged at once, then run here, its events to the inbox named."""
        nc = self._nc
        events_to = (msg.headers or {}).get(names.PARKED_EVENTS_HEADER, "")
        if nc is None or not events_to:
            return
        try:
            resume = common_pb2.ServedResume.FromString(msg.data)
        except Exception:  # not a resume: nothing to run, and nobody to tell but the log
            logger.warning("a forwarded resume could not be read", extra={"subject": msg.subject})
            return
        # Known before the acknowledgement: a cancel that follows it at once finds the resume.
        self._forwarding[events_to] = scope = anyio.CancelScope()
        await msg.respond(b"")

        async def write(event: common_pb2.ServedToolEvent) -> None:
            await nc.publish(events_to, event.SerializeToString())

        async def run() -> None:
            try:
                with scope:
                    await self.resume(resume, write)
            except Exception as exc:  # the bus went away mid-answer: the forwarder gives up within its wait
                logger.warning("a forwarded resume's events could not be sent", extra={"error": repr(exc)})
            finally:
                self._forwarding.pop(events_to, None)

        self._group.start_soon(run)

    async def _forward(self, nc: NatsClient, holder: str, resume: common_pb2.ServedResume, write: Write) -> None:
        """Resume a call another replica holds: forward the answer to it, and relay its events until the call parks
        again or replies."""
        inbox = nc.new_inbox()
        events = await nc.subscribe(inbox)
        try:
            try:
                await nc.request(
                    names.PARKED_PREFIX + holder,
                    resume.SerializeToString(),
                    timeout=ACK_WITHIN,
                    headers={names.PARKED_EVENTS_HEADER: inbox},
                )
            except (NoRespondersError, TimeoutError, NatsError):
                await write(_refused(HOLDER_GONE.format(holder=holder)))
                return
            try:
                with anyio.move_on_after(self._within) as waiting:
                    async for msg in events.messages:
                        event = common_pb2.ServedToolEvent.FromString(msg.data)
                        await write(event)
                        if event.HasField("reply") or (event.HasField("question") and event.question.parked_id):
                            return
            except anyio.get_cancelled_exc_class():  # the caller cancelled: the holder cancels the call upstream
                with anyio.CancelScope(shield=True):
                    await nc.publish(names.PARKED_PREFIX + holder + CANCEL_SUFFIX, inbox.encode())
                raise
            if waiting.cancelled_caught:
                await write(_refused(HOLDER_SILENT.format(holder=holder, wait=seconds(self._within))))
        finally:
            with anyio.CancelScope(shield=True):
                await events.unsubscribe()

    async def _run(self, running: _Running, call: common_pb2.CallServedToolRequest) -> None:
        async def ask(message: str, schema: dict[str, Any]) -> types.ElicitResult:
            return await self._ask(running, message, schema)

        try:
            with running.scope:
                try:
                    reply = await self._proxy.call(call.name, call.arguments_json, running.progress, ask, running.stop)
                except ToolsError as exc:  # refused before it ran (not exposed, withheld): the caller reads why
                    reply = common_pb2.CallServedToolReply(is_error=True, text=str(exc))
                except Exception:  # this task outlives the stream that started it: it never takes the service down
                    logger.exception("a proxied call failed in the tools service", extra={"tool": call.name})
                    reply = common_pb2.CallServedToolReply(is_error=True, text=FAILED)
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
            wait, said = running.wait()
            await running.emit(common_pb2.ServedToolEvent(question=question), last=True)
            with anyio.move_on_after(wait) as waiting:
                await running.answered.wait()
            if waiting.cancelled_caught:
                running.stop.now(EXPIRED.format(wait=said), "timeout")
                return CANCEL
            return running.answer
        finally:
            self._unpark(parked_id)

    def _unpark(self, parked_id: str) -> None:
        if self._parked.pop(parked_id, None) is not None:
            self._metrics.upstream_parked.set(len(self._parked))


def _refused(text: str) -> common_pb2.ServedToolEvent:
    return common_pb2.ServedToolEvent(reply=common_pb2.CallServedToolReply(is_error=True, text=text))
