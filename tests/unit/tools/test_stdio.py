"""The stdio upstream's reader (`saip.tools.upstream.lines.Reader`): lines within, at and past
`tools.upstream-max-response-bytes`, the id of a response past it read at either end, a line that answers nothing
ending the connection, an endless line, and lines split anywhere across chunks (a UTF-8 character too); and the
requests in flight (`InFlight`) that a connection ending under them fails with its sentence."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from saip.tools.upstream.bounded import too_large
from saip.tools.upstream.lines import KEEP, InFlight, LineTooLarge, Reader, leading, trailing
from saip.tools.upstream.stdio import STDERR_CHARS, STDERR_PIECE, StderrTail

LIMIT = 4096


def result_line(request: int | str, text: str, *, id_first: bool = True) -> bytes:
    """A tools/call response as the Python SDK writes it (the id before the result) or the TypeScript SDK does
    (after)."""
    result = {"content": [{"type": "text", "text": text}]}
    envelope: dict[str, Any] = (
        {"jsonrpc": "2.0", "id": request, "result": result}
        if id_first
        else {"result": result, "jsonrpc": "2.0", "id": request}
    )
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def messages(items: list[SessionMessage | Exception]) -> list[Any]:
    assert all(isinstance(item, SessionMessage) for item in items), items
    return [item.message for item in items if isinstance(item, SessionMessage)]


def cut(request: int | str) -> types.JSONRPCError:
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=too_large(LIMIT))
    return types.JSONRPCError(jsonrpc="2.0", id=request, error=error)


def padded(request: int, size: int) -> bytes:
    """A response line of exactly `size` bytes, its newline not counted."""
    bare = len(result_line(request, "")) - 1
    return result_line(request, "x" * (size - bare))


def test_a_line_within_the_limit_and_one_exactly_at_it_are_parsed_whole() -> None:
    reader = Reader(LIMIT)
    within, at = padded(1, LIMIT - 1), padded(2, LIMIT)
    assert len(at) == LIMIT + 1
    [first, second] = messages(reader.feed(within + at))
    assert (first.id, second.id) == (1, 2)
    assert isinstance(second, types.JSONRPCResponse)
    assert len(second.result["content"][0]["text"]) > LIMIT - 100
    assert reader.held == 0


def test_a_line_one_byte_past_the_limit_fails_its_request() -> None:
    assert messages(Reader(LIMIT).feed(padded(7, LIMIT + 1))) == [cut(7)]


def test_a_response_past_the_limit_with_its_id_first_fails_its_request_as_soon_as_it_passes() -> None:
    reader = Reader(LIMIT)
    line = result_line(3, "x" * (50 * LIMIT))
    passed = messages(reader.feed(line[: LIMIT + 10]))  # the line goes on: its end is not needed to know its id
    rest = reader.feed(line[LIMIT + 10 :] + result_line(4, "the connection goes on"))
    assert passed == [cut(3)]
    [after] = messages(rest)
    assert (after.id, after.result["content"][0]["text"]) == (4, "the connection goes on")


def test_a_response_past_the_limit_with_its_id_last_fails_its_request_at_its_end() -> None:
    reader = Reader(LIMIT)
    line = result_line("call-9", "y" * (50 * LIMIT), id_first=False)
    before_the_end = reader.feed(line[:-1])
    at_the_end = messages(reader.feed(line[-1:] + result_line(10, "next")))
    assert before_the_end == []
    assert [message.id for message in at_the_end] == ["call-9", 10]
    assert at_the_end[0] == cut("call-9")


def test_a_line_past_the_limit_without_an_id_ends_the_connection_naming_the_limit() -> None:
    reader = Reader(LIMIT)
    line = json.dumps({"jsonrpc": "2.0", "result": {"text": "z" * (2 * LIMIT)}}).encode() + b"\n"
    items = reader.feed(result_line(1, "before") + line + result_line(2, "never read"))
    [before] = messages(items[:1])
    [ended] = items[1:]
    assert before.id == 1
    assert isinstance(ended, LineTooLarge)
    assert f"past {LIMIT} bytes (tools.upstream-max-response-bytes)" in str(ended)
    assert reader.feed(result_line(3, "after the end")) == []


def test_a_request_or_notification_of_the_server_past_the_limit_ends_the_connection_even_with_an_id() -> None:
    request = {"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": {"text": "p" * (2 * LIMIT)}}
    params_first = {"jsonrpc": "2.0", "params": {"text": "p" * (2 * LIMIT)}, "id": 6, "method": "ping"}
    for message in (request, params_first):
        [ended] = Reader(LIMIT).feed(json.dumps(message).encode() + b"\n")
        assert isinstance(ended, LineTooLarge)


def test_an_endless_line_is_discarded_as_it_arrives_and_never_held() -> None:
    reader = Reader(LIMIT)
    first = reader.feed(b'{"jsonrpc":"2.0","id":8,"result":{"text":"' + b"w" * LIMIT)
    held = []
    for _ in range(200):  # 12.5 MiB of one line, without its newline
        assert reader.feed(b"w" * 65536) == []
        held.append(reader.held)
    assert messages(first) == [cut(8)]
    assert max(held) <= 2 * KEEP


def test_an_endless_line_without_an_id_at_its_start_holds_its_ends_only() -> None:
    reader = Reader(LIMIT)
    held = []
    for _ in range(200):
        assert reader.feed(b"w" * 65536) == []
        held.append(reader.held)
    assert max(held) <= 2 * KEEP


@pytest.mark.parametrize("size", [1, 7, 100, 4095])
def test_lines_split_across_chunks_anywhere_read_as_when_whole(size: int) -> None:
    stream = result_line(1, "a") + padded(2, LIMIT) + result_line(3, "b" * (3 * LIMIT), id_first=False)
    stream += result_line(4, "c")
    reader = Reader(LIMIT)
    items = [item for at in range(0, len(stream), size) for item in reader.feed(stream[at : at + size])]
    read = messages(items)
    assert [message.id for message in read] == [1, 2, 3, 4]
    assert read[2] == cut(3)


def test_a_utf8_character_split_across_chunks_is_read_whole() -> None:
    line = result_line(1, "naïve ✓ 日本")
    split = line.index("✓".encode()) + 1  # inside the three bytes of the check mark
    reader = Reader(LIMIT)
    [message] = messages(reader.feed(line[:split]) + reader.feed(line[split:]))
    assert message.result["content"][0]["text"] == "naïve ✓ 日本"


def test_a_line_within_the_limit_that_is_not_json_rpc_is_its_parse_error_and_reading_goes_on() -> None:
    items = Reader(LIMIT).feed(b"not json\n" + result_line(2, "fine"))
    assert isinstance(items[0], ValueError)
    assert [message.id for message in messages(items[1:])] == [2]


def test_the_ends_of_a_line_give_only_its_top_level_members() -> None:
    nested = '{"jsonrpc":"2.0","id":4,"result":{"structuredContent":{"id":99,"text":"a,b'
    assert leading(nested) == ({"jsonrpc": "2.0", "id": 4}, "result")
    assert leading('{"result":{"id":1,"content":[{"text":"xx') == ({}, "result")
    assert trailing('xx"}],"id":99}},"jsonrpc":"2.0","id":"r-1"}') == {"jsonrpc": "2.0", "id": "r-1"}
    assert trailing('"text":"a,\\"id\\":7,b"}}}') == {}


def request(request_id: int) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={"name": "echo"})


def test_the_requests_in_flight_when_the_connection_ends_fail_with_its_sentence_and_only_they() -> None:
    in_flight = InFlight()
    for sent in (1, 2, 3, 4):
        in_flight.sent(request(sent))
    in_flight.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}))
    reader = Reader(LIMIT)
    for item in reader.feed(result_line(1, "answered") + padded(3, LIMIT + 1)):  # 3 answered past the limit
        in_flight.read(item)
    noise = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * LIMIT}})
    [ended] = reader.feed(noise.encode() + b"\n")
    assert isinstance(ended, LineTooLarge)
    refused = messages(in_flight.refused(ended))
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=str(ended))
    assert refused == [types.JSONRPCError(jsonrpc="2.0", id=4, error=error)]
    assert in_flight.refused(ended) == []


def test_stderr_is_passed_on_by_whole_lines_and_its_last_three_are_the_tail() -> None:
    tail = StderrTail()
    assert tail.feed(b"one\ntw") == ["one"]
    assert tail.feed(b"o\nthree\n\nfour") == ["two", "three", ""]
    assert tail.end() == ["four"] and tail.end() == []
    assert tail.said() == "two / three / four"
    long = StderrTail()
    pieces = long.feed(b"x" * (STDERR_PIECE * 2 + 5))  # a line that never ends is passed on in pieces
    assert [len(piece) for piece in pieces] == [STDERR_PIECE, STDERR_PIECE] and long.end() == ["xxxxx"]
    assert long.said() == " / ".join(["x" * STDERR_CHARS, "x" * STDERR_CHARS, "xxxxx"])
