"""The JSON shapes of the chat's conversations and turns, the same for the chat tools (the AI) and the REST API (the
person)."""

from __future__ import annotations

import time
from typing import Any

from saip.gateway.areas.chat.turn import TurnState
from saip.gateway.areas.words import when
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


def conversation(entry: gateway_pb2.ChatConversation, *, turns: int = 0) -> dict[str, Any]:
    """A conversation with its last `turns` turns (0: none, only how many it holds)."""
    last = entry.turns[-1] if entry.turns else None
    view: dict[str, Any] = {
        "conversationId": entry.id,
        "title": entry.title,
        "createdAt": when(entry.created_at),
        "updatedAt": when(entry.updated_at),
        "turnCount": len(entry.turns),
        "lastAnswer": last.answer[:200] if last else "",
        "waitingForApproval": waiting(entry),
    }
    if turns:
        view["turns"] = [turn(entry.id, item) for item in entry.turns[-turns:]]
    return view
