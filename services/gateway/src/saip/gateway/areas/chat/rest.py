"""The person's side of the chat under /api/v1/chat: a turn (POST /chat/ask) and the conversations. A turn asked
over REST has no channel for questions, so a gated tool inside it is declined, as for every client that cannot ask."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from saip.gateway.areas.chat.contribution import ChatArea
from saip.gateway.areas.chat.inputs import AskInput
from saip.gateway.rest import Call, Envelope, area_router
from saip.gateway.surface.management import Caller

PERSON = Caller(client_name="rest-api")


def router(area: ChatArea) -> APIRouter:
    api = area_router(
        "/chat",
        {
            "GET /conversations": Call(
                area.list_conversations, "Conversations, most recently updated first, with their last turns"
            ),
        },
    )

    @api.post("/ask", summary="Run one chat turn (data: answer, status, model, tokens, toolCalls, conversationId)")
    async def ask(body: AskInput) -> Envelope:
        return Envelope.of(await area.ask(body, PERSON))

    @api.get("/conversations/{conversation_id}", summary="One conversation with every turn it keeps")
    async def conversation(
        conversation_id: Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")],
    ) -> Envelope:
        return Envelope.of(await area.conversation(conversation_id))

    return api
