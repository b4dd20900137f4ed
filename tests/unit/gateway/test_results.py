"""The bounded answer of a tool call: the JSON once (structured content only while small), and a cut with a note."""

from __future__ import annotations

import json

import mcp_types as types

from saip.gateway.surface import results


def text(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_small_envelope_is_text_and_structured_content_alike() -> None:
    envelope = {"ok": True, "message": "done", "warnings": [], "data": {"n": 1}}
    result = results.envelope_result(envelope, False, results.DEFAULT_LIMIT)
    assert json.loads(text(result)) == envelope == result.structured_content


def test_a_large_envelope_within_the_limit_is_sent_once_as_text() -> None:
    envelope = {"ok": True, "message": "done", "warnings": [], "data": {"text": "x" * 100_000}}
    result = results.envelope_result(envelope, False, results.DEFAULT_LIMIT)
    assert json.loads(text(result)) == envelope
    assert result.structured_content is None


def test_an_envelope_above_the_limit_keeps_its_head_and_the_start_of_its_data() -> None:
    envelope = {"ok": True, "message": "done", "warnings": ["w"], "data": {"text": '"\n' * 200_000}}
    result = results.envelope_result(envelope, False, 8192)
    sent = json.loads(text(result))
    assert results.wire_size(text(result)) <= 8192
    assert (sent["ok"], sent["message"], sent["warnings"][0]) == (True, "done", "w")
    assert sent["warnings"][1].startswith("The result was cut: its data was ")
    assert json.dumps(envelope["data"]).startswith(sent["data"]) and len(sent["data"]) > 1000


def test_a_published_text_above_the_limit_is_cut_with_a_note_and_no_structured_content() -> None:
    long = json.dumps({"lines": ["\u00e9\t"] * 100_000})
    result = results.text_result(long, json.loads(long), True, 8192)
    sent = text(result)
    assert results.wire_size(sent) <= 8192
    assert sent.endswith("Ask the tool for less to see the rest.]") and long.startswith(sent.split("\n\n[")[0])
    assert result.structured_content is None and result.is_error


def test_the_longest_prefix_within_a_budget_is_found() -> None:
    assert results.prefix_within("abc", 100) == "abc"
    assert results.prefix_within('a"b"c', 6) == 'a"b'  # "a\"b" is 6 bytes
