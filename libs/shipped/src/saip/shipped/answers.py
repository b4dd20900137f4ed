"""What a shipped tool answers: its text (the whole answer, which every client reads) and, when the result is a
JSON object, the same object as structured content; an exposed upstream member's answer is relayed as it came."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types

STRUCTURED_LIMIT = 64 * 1024  # as the gateway: the structured content repeats the text only while it is small


@dataclass(frozen=True)
class Answer:
    text: str
    structured: dict[str, Any] | None
    is_error: bool = False

    def result(self) -> types.CallToolResult:
        small = self.structured is not None and len(self.text.encode()) <= STRUCTURED_LIMIT
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=self.text)],
            structured_content=self.structured if small else None,
            is_error=self.is_error,
        )


@dataclass(frozen=True)
class Relayed:
    """An upstream's own answer to an exposed member's call, passed on as it came (every content block kept)."""

    answer: types.CallToolResult

    @property
    def is_error(self) -> bool:
        return bool(self.answer.is_error)

    def result(self) -> types.CallToolResult:
        return self.answer
