"""The served-tools contract (common.proto's ServedTool RPCs) from the gateway's side: what one serving service
serves, and a call of one of its tools there, over the gateway's one channel to that service.

A service that streams (the upstream side of tools) relays a call's progress as it comes, and its tool's own questions
(an upstream's elicitation): a 2025-11-25 caller that can elicit is asked them through the same `Interaction`, and its
answer goes back on the same stream; for a caller that cannot elicit the question is declined and the upstream reads
the decline. A 2026-07-28 caller has no back channel: the call parks at the question on the tools replica
(`park_seconds`: the approval wait, or a chat turn's time left; and `park_until`, the turn's deadline, since the
replica counts its wait from the question), and the question comes back with its parked id; `resume` answers it, and
the parked call goes on to its next question or its reply. The caller cancelling the call cancels the stream, which
cancels the upstream's request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import grpc
from anyio.abc import ObjectSendStream

from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.surface import parked
from saip.gateway.surface.approval import ElicitationFailed, Interaction
from saip.gateway.surface.management import Caller
from saip.v1 import common_pb2

logger = logging.getLogger(__name__)

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
