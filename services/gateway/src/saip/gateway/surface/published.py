"""Published tools: what the serving services (tools, knowledge) serve on /mcp, kept live, and each call through them.

A serving service implements ListServedTools and CallServedTool (proto: saip.v1.ServedTool). Every change to what
it serves is a write to its key-value bucket; each gateway replica watches that bucket, lists the served tools
again, and replaces its registry source, so clients get `list_changed` on every replica. Published tools are served
whether or not the management surface is on.

A call passes the tool's own gate: a tool with HITL REQUIRED asks the person through the same code as the
management gate (both eras, same outcome sentences), then the owning service runs it, and one ToolCall record,
masked, lands on the audit trail through the same audited-call core.

A service that streams (the upstream side of tools) relays a call's progress as it comes, and its tool's own questions
(an upstream's elicitation): a 2025-11-25 caller that can elicit is asked them through the same `Interaction`, and its
answer goes back on the same stream. A 2026-07-28 caller has no back channel: the call parks at the question on the
tools replica (`park_seconds`: the approval wait, or a chat turn's time left; and `park_until`, the turn's deadline,
since the replica counts its wait from the question), and the caller gets the question with a
state the SDK seals and binds to its token, naming the parked call, the tool, the canonical arguments' hash, a one-shot
nonce and the call's start and approval; its retry with the answer resumes the parked call, which goes on to its next
question or its reply, and the call is recorded once, when it ends (or by the sweeper of parked questions, as TIMEOUT,
when nobody answers). A chat turn's call is the client's that started the turn: asked through the turn's interaction
(2025-11-25), or parked with the turn stopped at its question (2026-07-28). For a caller that cannot elicit the question
is declined and the upstream reads the decline. The caller cancelling the call cancels the stream, which cancels the
upstream's request.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from typing import Any

import anyio
import grpc
import mcp_types as types
from anyio.abc import ObjectSendStream
from nats.js.kv import KeyValue

from saip.common import approval_sentences, jsondepth
from saip.common.approval_sentences import REPLAYED, UPSTREAM_EXPIRED, UPSTREAM_MISMATCH
from saip.common.masking import mask_quoted
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.surface import parked
from saip.gateway.surface.approval import Asked, Decided, Decision, ElicitationFailed, Interaction
from saip.gateway.surface.asking import Approvals
from saip.gateway.surface.audited import Auditor, Ended, Failed, PublishedToolCall
from saip.gateway.surface.gate import GateResult, consult
from saip.gateway.surface.management import Caller, Outcome
from saip.gateway.surface.registrar import Notifier
from saip.gateway.surface.registry import Changes, Registry, ServedSet, ServedTool
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

SOURCE_PREFIX = "published:"
MAX_QUESTIONS = 8  # answers not yet sent on a call's stream: a tool asks one question at a time
CALL_DEADLINE = 120.0  # a sandboxed tool has 30 s of wall clock by default; the service enforces its own limit


class ServedStub:
    """ListServedTools and CallServedTool of one serving service's gRPC service (the contract of common.proto)."""

    def __init__(self, channel: grpc.aio.Channel, grpc_service: str) -> None:
        self.list = channel.unary_unary(
            f"/{grpc_service}/ListServedTools",
            request_serializer=common_pb2.ListServedToolsRequest.SerializeToString,
            response_deserializer=common_pb2.ListServedToolsReply.FromString,
        )
        self.call = channel.unary_unary(
            f"/{grpc_service}/CallServedTool",
            request_serializer=common_pb2.CallServedToolRequest.SerializeToString,
            response_deserializer=common_pb2.CallServedToolReply.FromString,
        )
        self.stream = channel.stream_stream(
            f"/{grpc_service}/CallServedToolStream",
            request_serializer=common_pb2.ServedToolInput.SerializeToString,
            response_deserializer=common_pb2.ServedToolEvent.FromString,
        )


class ServedToolsClient:
    """The tools one serving service serves, over the gateway's one channel to that service."""

    def __init__(self, channel: ServiceChannel, grpc_service: str, name: str = "", *, streams: bool = False) -> None:
        """`name`: what its tools are a source of (the channel's service unless a second gRPC service shares it);
        `streams`: the service offers CallServedToolStream, whose progress and questions the call relays."""
        self.channel = channel
        self._name = name or channel.service
        self._streams = streams
        self._stub = lambda grpc_channel: ServedStub(grpc_channel, grpc_service)

    @property
    def service(self) -> str:
        return self._name

    async def list(self) -> list[common_pb2.ServedTool]:
        reply = await self.channel.call(self.channel.stub(self._stub).list, common_pb2.ListServedToolsRequest())
        return list(reply.tools)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        caller: Caller,
        interaction: Interaction | None = None,
        *,
        park: float = 0.0,
        resume: common_pb2.ServedResume | None = None,
    ) -> common_pb2.CallServedToolReply | common_pb2.ServedQuestion:
        """The tool's reply; on a streaming service, its progress and questions go through `interaction`. A call
        that can take neither (no progress token, no way to ask its caller) is one unary round trip. For a caller
        that answers in a new request (`parks`), the call parks at its own question for at most `park` seconds (and
        no later than the caller's deadline) and the question (with its parked id) is returned; `resume` answers the
        question a call parked at, and that call goes on, parking so at its next question."""
        request = common_pb2.CallServedToolRequest(
            name=name, arguments_json=json.dumps(arguments, ensure_ascii=False), caller=caller.proto
        )
        stub = self.channel.stub(self._stub)
        parking = self._streams and (
            resume is not None or (park > 0 and interaction is not None and parks(caller, interaction))
        )
        asks = interaction if interaction is not None and caller.elicitation and not interaction.roundtrip else None
        unary = not self._streams or interaction is None or (asks is None and not interaction.reports_progress)
        if unary and not parking:
            return await self.channel.call(stub.call, request, CALL_DEADLINE)
        until = caller.deadline.at if caller.deadline is not None else 0.0
        if resume is not None:
            resume.park_seconds, resume.park_until = park, until
            first = common_pb2.ServedToolInput(resume=resume)
        else:
            if parking:
                request.park_seconds, request.park_until = park, until
            first = common_pb2.ServedToolInput(call=request)
        answers, answered = anyio.create_memory_object_stream[common_pb2.ServedToolInput](MAX_QUESTIONS)

        async def inputs() -> AsyncIterator[common_pb2.ServedToolInput]:
            yield first
            async with answered:
                async for answer in answered:
                    yield answer

        async with answers, anyio.create_task_group() as group:
            async for event in self.channel.stream(lambda: stub.stream(inputs(), timeout=CALL_DEADLINE)):
                found: common_pb2.ServedToolEvent = event
                if found.HasField("reply"):
                    group.cancel_scope.cancel()
                    return found.reply
                if found.HasField("question") and found.question.parked_id:
                    group.cancel_scope.cancel()
                    return found.question
                if found.HasField("question"):
                    group.start_soon(_relay_question, found.question, asks, answers)
                elif interaction is not None:
                    await interaction.progress(found.progress.progress, found.progress.total, found.progress.message)
        raise ServiceUnavailable(self.service, f"the call of '{name}' ended without an answer")


async def _relay_question(
    question: common_pb2.ServedQuestion,
    asks: Interaction | None,
    answers: ObjectSendStream[common_pb2.ServedToolInput],
) -> None:
    """Put a served tool's own question to the caller (None: it cannot be asked, so it is declined) and send back
    the answer; a question the client could not take is a cancel."""
    answer = common_pb2.ServedAnswer(id=question.id, action="decline")
    if asks is not None:
        try:
            given = await asks.elicit(question.message, parked.question_schema(question))
        except (ValueError, ElicitationFailed) as exc:
            logger.info("a served tool's question could not be asked", extra={"error": str(exc)})
            answer = parked.served_answer(None, question.id)
        else:
            answer = parked.served_answer(given, question.id)
    try:
        await answers.send(common_pb2.ServedToolInput(answer=answer))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):  # the call ended meanwhile: nobody waits for it
        return


def parks(caller: Caller, interaction: Interaction) -> bool:
    """Whether a served tool's own question goes to this caller as a question of its own (2026-07-28, a caller that
    can elicit), its call parked until the answer comes in a new request. A chat turn's call parks too: the turn
    stops at the question as at a gated tool's, its sealed state carrying the parked call's, and resumes it."""
    return interaction.roundtrip and caller.elicitation


def definition(spec: common_pb2.ServedTool) -> types.Tool:
    """What the model sees: name, title, description, the schema, and the annotations."""
    schema = json.loads(spec.input_schema_json or "{}")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError("the input schema must be a JSON object schema")
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return types.Tool(
        name=spec.name,
        title=spec.title or None,
        description=spec.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=spec.title or None,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=spec.open_world,
        ),
    )


def question_for(spec: common_pb2.ServedTool, caller: Caller, arguments: Mapping[str, Any], wait: float) -> str:
    """The question of a published tool that asks: the chat's for a chat turn's call, else the published-tool
    question shipped servers ask too (`saip.common.approval_sentences`)."""
    if caller.chat:
        return approval_sentences.chat_question(spec.risk_level, spec.name, arguments)
    return approval_sentences.tool_question(spec.risk_level, caller.label, spec.name, spec.hitl_prompt, arguments, wait)


class PublishedTools:
    """The gate of published tools: the HITL question when the tool asks for one, the call, the audit record.
    A chat turn's calls (`caller.chat`) pass it too, with the chat's question and on the chat side of the meter."""

    def __init__(self, *, approvals: Approvals, auditor: Auditor) -> None:
        self.approvals = approvals
        self._auditor = auditor

    async def execute(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        arguments: dict[str, Any] | None,
        caller: Caller,
        interaction: Interaction,
    ) -> GateResult:
        call = PublishedToolCall(spec.name, caller, dict(arguments or {}), source=spec.source, proxied=proxied_of(spec))
        ended = await self._auditor.run(call, lambda: self._run(spec, client, call, interaction))
        if isinstance(ended, Asked):
            return GateResult(question=ended)
        if ended.warning:
            logger.warning("tool call record not stored durably", extra={"tool": spec.name})
        answer = ended.answer
        if answer.is_error and answer.text:  # a refusal or failure may quote the arguments; a tool's answer is data
            return replace(answer, text=mask_quoted(answer.text, call.arguments))
        return answer

    async def _run(
        self, spec: common_pb2.ServedTool, client: ServedToolsClient, call: PublishedToolCall, interaction: Interaction
    ) -> Ended[GateResult] | Asked:
        arguments = call.arguments or {}
        state = parked.parked_state(interaction)
        if state is not None:  # a 2026-07-28 retry answering the question its call parked at: past the gate already
            return await self._resumed(spec, client, call, interaction, state)
        if spec.hitl_required:
            text = question_for(spec, call.caller, arguments, self.approvals.wait_seconds)
            verdict = await consult(self.approvals, interaction, call, text, f"L{spec.risk_level}")
            if verdict.asked is not None:
                return verdict.asked
            if verdict.refusal is not None:
                return _failed(verdict.refusal, verdict.outcome)
        return await self._ran(spec, client, call, interaction)

    async def _ran(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        call: PublishedToolCall,
        interaction: Interaction,
        resume: common_pb2.ServedResume | None = None,
    ) -> Ended[GateResult] | Asked:
        """The call at its service (or the parked call `resume` answers), until its reply or its next question, which
        parks the call for the approval wait (less when a chat turn's deadline comes sooner)."""
        arguments, wait = call.arguments or {}, self.approvals.wait_for(call.caller)
        ran = await self._auditor.attempt(
            call, lambda: client.call(spec.name, arguments, call.caller, interaction, park=wait, resume=resume)
        )
        if isinstance(ran, Failed):
            return _failed(ran.message, Outcome.ERROR)
        if isinstance(ran, common_pb2.ServedQuestion):
            left = self.approvals.wait_for(call.caller)  # a chat turn's time went on while the call ran to its question
            return parked.question_of(call, ran, left, self.approvals.said(left))
        result = GateResult(text=ran.text, structured=_object(ran.structured_json), is_error=ran.is_error)
        return Ended(result, Outcome.ERROR if ran.is_error else Outcome.OK, ran.text)

    async def _resumed(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        call: PublishedToolCall,
        interaction: Interaction,
        state: parked.ParkedState,
    ) -> Ended[GateResult] | Asked:
        """Hand the retry's answer to the parked call, which goes on; the call is the one that started, so its record
        keeps its start and the person's decision at saip's own question."""
        if not state.binds(call) or call.proxied is None:  # only an exposed upstream tool's call parks
            return _failed(UPSTREAM_MISMATCH.format(tool=spec.name), Outcome.REFUSED)
        if not await self.approvals.spend(state.nonce, spec.name):
            return _failed(REPLAYED.format(tool=spec.name), Outcome.REFUSED)
        call.started, call.decision = state.started, state.decision
        had = self.approvals.said(round(state.deadline - state.asked_at, 3))
        expired = UPSTREAM_EXPIRED.format(tool=spec.name, wait=had)
        if not await self.approvals.pending.settle(state.nonce):
            # A sweeper recorded the unanswered question as TIMEOUT first: the call ended there.
            call.decision = replace(call.decision or Decided(Decision.TIMEOUT), recorded=True)
            return _failed(expired, Outcome.TIMEOUT)
        if time.time() > state.deadline:  # the tools replica dropped the parked call at the same wait
            return _failed(expired, Outcome.TIMEOUT)
        resume = common_pb2.ServedResume(
            parked_id=state.parked_id,
            name=spec.name,
            answer=parked.answer_of(interaction),
        )
        return await self._ran(spec, client, call, interaction, resume)


def proxied_of(spec: common_pb2.ServedTool) -> events_pb2.ProxiedCall | None:
    """An exposed upstream tool's ProxiedCall: which server and which of its tools the name on /mcp stands for."""
    if not spec.upstream_server:
        return None
    return events_pb2.ProxiedCall(server=spec.upstream_server, tool=spec.upstream_tool, alias=spec.name)


def _failed(message: str, outcome: Outcome) -> Ended[GateResult]:
    return Ended(GateResult(text=message, is_error=True), outcome, message)


def _object(text: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = jsondepth.loads(text)
    except ValueError:  # not JSON, or nested deeper than saip reads: sent as text only
        return None
    return value if isinstance(value, dict) else None


class PublishedSource:
    """One serving service's tools in the registry, listed again whenever its bucket changes."""

    def __init__(
        self, *, client: ServedToolsClient, registry: Registry, notifier: Notifier, gate: PublishedTools
    ) -> None:
        self.client = client
        self._registry = registry
        self._notifier = notifier
        self._gate = gate
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()
        self.listed = False  # whether the last listing succeeded

    @property
    def service(self) -> str:
        return self.client.service

    @property
    def source(self) -> str:
        return source_of(self.service)

    def changed(self) -> None:
        """Something in the bucket changed (or may have): list again soon; bursts collapse into one listing."""
        self._dirty.set()

    async def refresh(self) -> Changes:
        """List the served tools and replace this source's share of /mcp; raises when the service is away."""
        async with self._lock:
            specs = await self.client.list()
            served = ServedSet()
            taken = self._registry.served_names(excluding=self.source)
            for spec in specs:
                if spec.name in taken or spec.name in served.tools:
                    logger.warning("served tool name taken; not serving it twice", extra={"tool": spec.name})
                    continue
                try:
                    tool = definition(spec)
                except ValueError as exc:
                    logger.warning("served tool skipped", extra={"tool": spec.name, "error": str(exc)})
                    continue
                served.tools[spec.name] = ServedTool(tool, self._caller(spec))
            changes = self._registry.replace(self.source, served)
            self.listed = True
            if changes.any:
                logger.info("published tools changed", extra={"source": self.service, "tools": len(served.tools)})
                await self._notifier.changed(changes)
            return changes

    def _caller(self, spec: common_pb2.ServedTool) -> Callable[..., Any]:
        async def call(arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction) -> GateResult:
            return await self._gate.execute(spec, self.client, arguments, caller, interaction)

        return call

    async def keep_listing(self) -> None:
        """List at once, then after every change, until a listing fails: the gateway keeps it alive
        (`saip.common.watch.keep_alive`: backoff with jitter while the service is away), and each start lists."""
        while True:
            self._dirty = anyio.Event()
            try:
                await self.refresh()
            except Exception:
                self.listed = False
                raise
            await self._dirty.wait()

    async def follow(self, kv: KeyValue) -> None:
        """Mark the listing stale now (a reconnect may have hidden changes) and on every change to the bucket, until
        the watcher ends."""
        self.changed()
        watcher = await kv.watchall()
        try:
            async for _entry in watcher:
                self.changed()
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]


def source_of(service: str) -> str:
    """The registry source of the tools a service serves."""
    return SOURCE_PREFIX + service
