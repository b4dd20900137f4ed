"""The chat tools' arguments, strict, each field described: one turn's (`saip_chat_ask`) and the history's."""

from __future__ import annotations

from pydantic import Field

from saip.gateway.surface.management import Input, ListedName


class AskInput(Input):
    prompt: str = Field(min_length=1, max_length=20_000, description="What to ask the chat model.")
    tools: list[ListedName] = Field(
        default_factory=list,
        max_length=32,
        description="Published tools the model may call in this turn (names from tools/list); never saip_ tools.",
    )
    conversationId: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[A-Za-z0-9-]+$",
        description="Continue this conversation (data.conversationId of an earlier turn); leave out for a new one.",
    )
    pipeline: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description=(
            "A knowledge pipeline (saip_knowledge_list_pipelines) searched for the prompt; the model gets the passages "
            "it finds, with their sources."
        ),
    )
    timeoutSeconds: int = Field(
        default=300, ge=1, le=1800, description="How long the turn may take, approvals included (at most 1800)."
    )


class ListInput(Input):
    turns: int = Field(default=3, ge=0, le=50, description="How many of each conversation's last turns to include.")
    limit: int = Field(default=20, ge=1, le=200, description="How many conversations, most recently updated first.")
