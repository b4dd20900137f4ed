"""The chat's model as the turn sees it: one round's request and answer (`Model`), whatever serves it. The adapter to
an OpenAI-compatible endpoint is `openai_model`, imported at the first turn: the `openai` library's import is CPU
every gateway start would otherwise spend before answering anything (docs/BENCHMARKS.md, "Cold start")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolRequest:
    """One tool call the model asked for: its id (which the answer names), the tool, the arguments as sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """One round's answer: the assistant message (kept in the turn's messages), its text and tool calls, and the
    tokens the round used."""

    message: dict[str, Any]
    text: str
    tool_calls: tuple[ToolRequest, ...]
    tokens: int


class ModelFailed(Exception):
    """The model endpoint did not give a usable answer; the message says what happened and what to check."""


class ModelTimedOut(ModelFailed):
    """The model did not answer within the time the turn had left."""


class Model(Protocol):
    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], within: float) -> Reply: ...
