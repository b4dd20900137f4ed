"""A stdio upstream's stdout read as JSON-RPC lines, never more than `tools.upstream-max-response-bytes` of one line
held (`Reader`).

The SDK's `mcp.client.stdio.stdio_client` reads the child's stdout into memory line by line with no limit and no
hook, so a server that writes a 50 MB line (or one line that never ends) would make the tools service hold all of it.
`Reader` takes the child's stdout in chunks and makes of them the `SessionMessage`s the SDK's `Client` reads (a line
that is not JSON-RPC is its parse error, as with the SDK's, parsed by its `jsonrpc_message_adapter`):

- a line within the limit (its newline not counted) is parsed whole, as the SDK would;
- a line past it is never held whole: its first and last `KEEP` bytes are kept and the rest is discarded up to its
  newline. A JSON-RPC response carries its `"id"` near one end (the Python SDK writes it before the result, the
  TypeScript SDK after it), so the request it answered gets an error response of its id whose message is the sentence
  the HTTP transports give (`bounded.too_large`): the call fails naming the key, and the connection goes on. An id at
  the start fails the call as soon as the line passes the limit, not when (if ever) the line ends;
- a line past the limit that answers no request saip can name (no id at either end, or a request or notification of
  the server's) ends the connection: `LineTooLarge`, whose sentence names the key, is the connection's FAILED reason,
  and the reconnect backoff applies. Every request still in flight on it (`InFlight`: sent, neither answered nor
  cancelled) first gets an error response of its id with that sentence, so its call fails saying why, not with the
  SDK's bare `Connection closed`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from saip.tools.errors import ToolsError
from saip.tools.upstream.bounded import too_large

logger = logging.getLogger(__name__)

# The bytes kept of each end of a line past the limit: a response's id and envelope fit in far less.
KEEP = 512
# The key of the member a line was cut in: `"key":` right after the members the head's parse kept.
_CUT_KEY = re.compile(r'\s*[{,]\s*"([^"\\]*)"\s*:')
_ANSWERS = ("result", "error")
_CANCELLED = "notifications/cancelled"


class LineTooLarge(ToolsError):
    """A stdio server wrote a line past the limit that answers no request saip can name: the connection ends."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the stdio server wrote a line past {limit} bytes (tools.upstream-max-response-bytes) that answers no "
            "request saip can name, so saip ended the connection; raise the limit if its messages are meant to be "
            "that long, or ask the person to check the server"
        )


def _members(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def leading(head: str) -> tuple[dict[str, Any], str | None]:
    """The top-level members a line's first bytes hold whole, and the key of the member the cut fell in (None when
    the head is no JSON object).

    Each comma is tried from the last: the longest prefix that closes into an object ends at a top-level comma (one
    inside a string or a nested value leaves it unclosable)."""
    commas = [at for at, char in enumerate(head) if char == ","]
    for at in reversed(commas):
        members = _members(head[:at] + "}")
        if members is not None:
            cut = _CUT_KEY.match(head, at)
            return members, cut.group(1) if cut else None
    cut = _CUT_KEY.match(head.lstrip())
    return {}, cut.group(1) if cut else None


def trailing(tail: str) -> dict[str, Any]:
    """The top-level members a line's last bytes hold whole: the longest suffix after a comma that opens into an
    object (the line's last `}` closes the top level, so a suffix that parses holds its last members)."""
    for at, char in enumerate(tail):
        if char == ",":
            members = _members("{" + tail[at + 1 :])
            if members is not None:
                return members
    return {}


def request_id(members: Mapping[str, Any]) -> int | str | None:
    """The id among a message's members: JSON-RPC's integer or string (a boolean is none)."""
    value = members.get("id")
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def parse(line: bytes) -> SessionMessage | Exception:
    """One whole line: its message, or its parse error (the session reports it and goes on, as with the SDK's)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        logger.warning("a stdio upstream wrote a line that is not JSON-RPC", extra={"error": str(exc)[:300]})
        return exc


class InFlight:
    """The ids of the requests saip sent the server that it has neither answered nor had cancelled: the calls a
    connection ending under them would leave to the SDK's bare `Connection closed`."""

    def __init__(self) -> None:
        self._ids: set[types.RequestId] = set()

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == _CANCELLED:
            self._ids.discard((message.params or {}).get("requestId"))

    def read(self, item: SessionMessage | Exception) -> None:
        if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self._ids.discard(item.message.id)

    def refused(self, reason: ToolsError) -> list[SessionMessage]:
        """An error response of each request in flight, its message the reason the connection ends."""
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=str(reason))
        answers = [SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=id_, error=error)) for id_ in self._ids]
        self._ids.clear()
        return answers


class Reader:
    """A stdio server's stdout, chunk by chunk, into the messages for the session; never more than `limit` bytes of
    one line held (and `2 * keep` of a line past it).

    `feed` returns what to deliver, in order: messages, parse errors, the error responses of requests whose answer
    was past the limit, and last, when a line past it answers nothing saip can name, a `LineTooLarge` that ends the
    connection (nothing is read after it)."""

    def __init__(self, limit: int, keep: int = KEEP) -> None:
        self.limit = limit
        self._keep = keep
        self._line = bytearray()
        self._head: bytes | None = None  # the first bytes of the line past the limit being discarded, else None
        self._tail = b""
        self._answered = False
        self._ended = False

    @property
    def held(self) -> int:
        """The bytes held of the current line."""
        return len(self._line) + len(self._head or b"") + len(self._tail)

    def feed(self, chunk: bytes) -> list[SessionMessage | Exception]:
        out: list[SessionMessage | Exception] = []
        start = 0
        while not self._ended:
            end = chunk.find(b"\n", start)
            self._take(chunk[start:] if end < 0 else chunk[start:end], out)
            if end < 0 or self._ended:
                break
            self._end(out)
            start = end + 1
        return out

    def _take(self, piece: bytes, out: list[SessionMessage | Exception]) -> None:
        keep = self._keep
        if self._head is not None:
            self._tail = (self._tail + piece[-keep:])[-keep:]
        elif len(self._line) + len(piece) <= self.limit:
            self._line += piece
        else:  # the ends of the line so far and the piece, without a copy of the whole (up to the limit)
            self._head = (bytes(self._line[:keep]) + piece[:keep])[:keep]
            self._tail = (bytes(self._line[-keep:]) + piece[-keep:])[-keep:]
            self._line.clear()
            self._passed(out)

    def _passed(self, out: list[SessionMessage | Exception]) -> None:
        """The line just went past the limit: a response whose id is at its start fails its request now."""
        assert self._head is not None
        members, cut = leading(self._head.decode("utf-8", "replace"))
        if "method" in members or cut not in (*_ANSWERS, None):  # the server's own request or notification
            self._fail(out)
            return
        found = request_id(members)
        if cut in _ANSWERS and found is not None:
            out.append(self._answer(found))
            self._answered = True

    def _end(self, out: list[SessionMessage | Exception]) -> None:
        if self._head is None:
            # Copied out and the buffer freed before the parse: pydantic parses bytes with far less memory than a
            # bytearray (about 5 MiB against 20 at the peak, for a 5 MiB line).
            line = bytes(self._line)
            self._line.clear()
            out.append(parse(line))
            return
        members = trailing(self._tail.decode("utf-8", "replace"))
        found = request_id(members)
        if not self._answered:
            if "method" in members or found is None:
                self._fail(out)
                return
            out.append(self._answer(found))
        self._head, self._tail, self._answered = None, b"", False

    def _answer(self, answered: int | str) -> SessionMessage:
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=too_large(self.limit))
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=answered, error=error))

    def _fail(self, out: list[SessionMessage | Exception]) -> None:
        out.append(LineTooLarge(self.limit))
        self._ended = True
        self._line.clear()
        self._head, self._tail = None, b""
