"""What a tool call answers on /mcp, bounded: the JSON once, and never more than a client's transport accepts.

Every client in both eras reads a result's text content; structured content is optional when a tool declares no
output schema. So the text always carries the whole answer (the management envelope as JSON, or a published tool's
own text), and the structured content repeats it only while it is small (`STRUCTURED_LIMIT`): a large answer is sent
once, in the text. The text itself is cut to `limit` bytes (`mcp-server.max-result-bytes`), measured as it travels
(JSON-escaped inside the JSON-RPC message), with a note saying so, because one answer is one SSE event and the MCP
SDK's client drops an event above 1 MiB.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types

from saip.gateway.config import RESULT_LIMIT

STRUCTURED_LIMIT = 64 * 1024  # bytes of JSON up to which the structured content repeats the text
DEFAULT_LIMIT = RESULT_LIMIT  # mcp-server.max-result-bytes's default, kept with its bounds in config.py
LIMIT_KEY = "mcp-server.max-result-bytes"

DATA_CUT = (
    "The result was cut: its data was {size} bytes, above the {limit}-byte limit ({key}); 'data' holds the start "
    "of its JSON. Ask for less (a filter, a smaller page) to see the rest."
)
TEXT_CUT = (
    "\n\n[The result was cut: it was {size} bytes, above the {limit}-byte limit ({key}). Ask the tool for less to "
    "see the rest.]"
)


def wire_size(text: str) -> int:
    """The bytes `text` takes inside a JSON message (quoted and escaped, as the JSON-RPC answer carries it)."""
    return len(json.dumps(text, ensure_ascii=False).encode())


def prefix_within(text: str, budget: int, size: Callable[[str], int] = wire_size) -> str:
    """The longest start of `text` whose `size` (by default its wire size) is at most `budget` bytes."""
    if size(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if size(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def envelope_result(envelope: dict[str, Any], is_error: bool, limit: int) -> types.CallToolResult:
    """A management envelope; when its JSON is above the limit, its data becomes the start of the data's JSON."""
    text = _json(envelope)
    size = wire_size(text)
    if size > limit:
        data = _json(envelope.get("data"))
        note = DATA_CUT.format(size=wire_size(data), limit=limit, key=LIMIT_KEY)
        head = {**envelope, "data": "", "warnings": [*envelope.get("warnings", []), note]}
        envelope = {**head, "data": prefix_within(data, limit, lambda start: wire_size(_json({**head, "data": start})))}
        text = _json(envelope)
    return _result(text, envelope, is_error)


def text_result(text: str, structured: dict[str, Any] | None, is_error: bool, limit: int) -> types.CallToolResult:
    """A published tool's own answer; above the limit its text is cut with a note, and sent without the structured
    content (which would not match the cut text)."""
    size = wire_size(text)
    if size > limit:
        note = TEXT_CUT.format(size=size, limit=limit, key=LIMIT_KEY)
        text = prefix_within(text, limit - wire_size(note)) + note
        structured = None
    return _result(text, structured, is_error)


def _result(text: str, structured: dict[str, Any] | None, is_error: bool) -> types.CallToolResult:
    small = structured is not None and len(text.encode()) <= STRUCTURED_LIMIT
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured if small else None, is_error=is_error
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
