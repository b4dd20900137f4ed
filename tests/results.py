"""A tool's result as the tests read it: its text, and the envelope a management tool's text holds."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def text(result: Any) -> str:
    """The text of a tool's result: its first content block, which every client reads (the SDK's result, or another
    client's of the same shape: fastmcp's)."""
    assert not isinstance(result, types.InputRequiredResult), result
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def envelope(result: Any) -> dict[str, Any]:
    """A management tool's answer: the envelope {ok, message, persisted, restartRequired, warnings, data} its text
    holds, which the structured content repeats when it is there."""
    data = json.loads(text(result))
    assert isinstance(data, dict), data
    if getattr(result, "structured_content", None) is not None:
        assert result.structured_content == data
    return data
