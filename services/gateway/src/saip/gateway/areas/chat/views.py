"""The JSON shapes of the chat's conversations and turns, the same for the chat tools (the AI) and the REST API (the
person)."""

from __future__ import annotations

import time
from typing import Any

from saip.common.words import when
from saip.gateway.areas.chat.turn import TurnState
from saip.v1 import gateway_pb2


def tool_call(call: gateway_pb2.ChatToolCall) -> dict[str, Any]:
    return {"name": call.name, "outcome": call.outcome}


def source(found: gateway_pb2.ChatSource) -> dict[str, Any]:
    return {
        "document": found.document,
        "source": found.source,
        "position": found.position,
        "page": found.page or None,
        "relevance": found.relevance,
    }


def turn(conversation_id: str, entry: gateway_pb2.ChatTurn) -> dict[str, Any]:
    return {
        "conversationId": conversation_id,
        "turnId": entry.id,
        "at": when(entry.at),
        "client": entry.client,
        "prompt": entry.prompt,
        "answer": entry.answer,
        "status": entry.status,
        "model": entry.model,
        "tokens": entry.tokens,
        "toolCalls": [tool_call(call) for call in entry.tool_calls],
        "pipeline": entry.pipeline or None,
        "sources": [source(found) for found in entry.sources],
    }


def waiting(entry: gateway_pb2.ChatConversation) -> bool:
    """Whether a turn of the conversation waits for the answer to a question: one stopped at it, within its timeout."""
    return entry.HasField("pending") and TurnState.loads(entry.pending.state_json).deadline > time.time()


def timed_out(entry: gateway_pb2.ChatConversation) -> gateway_pb2.ChatTurn | None:
    """The turn stopped at a question nobody answered by its deadline, as it ended then (the sweeper recorded it as
    TIMEOUT; the conversation is written again only by a retry or the next turn), else None."""
    if not entry.HasField("pending") or not entry.pending.HasField("timed_out") or waiting(entry):
        return None
    ended = gateway_pb2.ChatTurn()
    ended.CopyFrom(entry.pending.timed_out)
    return ended


def history(entry: gateway_pb2.ChatConversation) -> list[gateway_pb2.ChatTurn]:
    """The conversation's turns as a person reads them: the kept ones, and a turn that timed out at its question."""
    ended = timed_out(entry)
    return [*entry.turns, *([ended] if ended is not None else [])]


def conversation(entry: gateway_pb2.ChatConversation, *, turns: int = 0) -> dict[str, Any]:
    """A conversation with its last `turns` turns (0: none, only how many it holds)."""
    shown = history(entry)
    last = shown[-1] if shown else None
    view: dict[str, Any] = {
        "conversationId": entry.id,
        "title": entry.title,
        "createdAt": when(entry.created_at),
        "updatedAt": when(entry.updated_at),
        "turnCount": len(shown),
        "lastAnswer": last.answer[:200] if last else "",
        "waitingForApproval": waiting(entry),
    }
    if turns:
        view["turns"] = [turn(entry.id, item) for item in shown[-turns:]]
    return view
