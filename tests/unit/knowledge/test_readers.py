"""Readers turn each supported type into text, and refuse what they cannot read with the reason."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saip.knowledge import readers
from saip.knowledge.errors import InvalidRequest
from tests.unit.knowledge.samples import pdf


def test_plain_text_is_kept_as_it_is() -> None:
    parsed = readers.read(b"line one\nline two\n", readers.TEXT, "notes.txt")
    assert (parsed.text, parsed.title, parsed.pages) == ("line one\nline two\n", "", 0)


def test_a_utf8_byte_order_mark_is_dropped() -> None:
    assert readers.read(b"\xef\xbb\xbfcaf\xc3\xa9", readers.TEXT, "bom.txt").text == "café"


def test_markdown_takes_its_first_heading_as_title() -> None:
    parsed = readers.read(b"Intro line\n\n## Restarting NATS ##\n\nStop it, then start it.", readers.MARKDOWN, "a.md")
    assert parsed.title == "Restarting NATS"
    assert "Stop it, then start it." in parsed.text


@given(st.lists(st.sampled_from(["#", "##", " ", "\n", "\t", "x", "Title", "\u2003"]), max_size=40).map("".join))
@settings(max_examples=300, deadline=None)
def test_the_markdown_title_is_the_first_heading_a_search_from_the_start_finds(text: str) -> None:
    text = "x" + text  # never empty: a document with no text is refused
    found = re.search(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    assert readers.read(text.encode(), readers.MARKDOWN, "a.md").title == (found.group(1).strip() if found else "")


def test_html_keeps_visible_text_without_scripts_styles_or_head() -> None:
    page = (
        "<html><head><title>Gateway &amp; metrics</title><style>p{color:red}</style></head>"
        "<body><script>var secret = 1;</script><h1>Metrics</h1><p>Scrape <b>/metrics</b> every 15&nbsp;s.</p>"
        "<ul><li>one</li><li>two</li></ul></body></html>"
    )
    parsed = readers.read(page.encode(), readers.HTML, "m.html")
    assert parsed.title == "Gateway & metrics"
    assert parsed.text.splitlines() == ["Metrics", "", "Scrape /metrics every 15\xa0s.", "", "one", "two"]
    assert "secret" not in parsed.text and "color" not in parsed.text


def test_json_becomes_one_path_and_value_per_line() -> None:
    data = {"title": "Runbook", "steps": [{"do": "drain"}, {"do": "restart", "wait": 5}], "empty": None}
    parsed = readers.read(json.dumps(data).encode(), readers.JSON, "r.json")
    assert parsed.title == "Runbook"
    assert parsed.text.splitlines() == [
        "title: Runbook",
        "steps[0].do: drain",
        "steps[1].do: restart",
        "steps[1].wait: 5",
    ]


def test_pdf_pages_are_separated_by_form_feeds_and_counted() -> None:
    parsed = readers.read(pdf(["Restart the broker", "Then check (twice)"], title="Ops"), readers.PDF, "ops.pdf")
    assert parsed.text == "Restart the broker\fThen check (twice)"
    assert (parsed.pages, parsed.title) == (2, "Ops")


# The rule a document nested past saip.common.jsondepth's limit is refused by, in its own words.
DEEP = "nested more than 64 levels deep, which saip does not read; send flatter data"


@pytest.mark.parametrize(
    ("data", "media_type", "reason"),
    [
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00", readers.TEXT, "looks binary", id="binary"),
        pytest.param(b"caf\xe9 latin-1", readers.TEXT, "is not UTF-8 text", id="not-utf8"),
        pytest.param(b"   \n\t ", readers.MARKDOWN, "has no text to ingest", id="blank"),
        pytest.param(b"{'single': quotes}", readers.JSON, "is not valid JSON", id="bad-json"),
        pytest.param(b"<html><script>only()</script></html>", readers.HTML, "has no text", id="empty-html"),
        pytest.param(b"hello, not a pdf", readers.PDF, "is not a PDF", id="fake-pdf"),
        pytest.param(b"%PDF-1.4\ngarbage", readers.PDF, "cannot be read as a PDF", id="broken-pdf"),
        pytest.param(pdf([""]), readers.PDF, "no extractable text", id="scanned-pdf"),
        pytest.param(b"[" * 5000 + b"]" * 5000, readers.JSON, DEEP, id="deep-arrays"),
        pytest.param(b'{"a":' * 5000 + b"1" + b"}" * 5000, readers.JSON, DEEP, id="deep-objects"),
    ],
)
def test_unreadable_content_is_refused_with_the_reason(data: bytes, media_type: str, reason: str) -> None:
    with pytest.raises(InvalidRequest, match=reason):
        readers.read(data, media_type, "doc")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a.TXT", readers.TEXT), ("b.md", readers.MARKDOWN), ("c.htm", readers.HTML), ("d.json", readers.JSON)],
)
def test_the_extension_names_the_reader(name: str, expected: str) -> None:
    assert readers.media_type_of_name(name) == expected


@pytest.mark.parametrize("name", ["archive.zip", "image.png", "Makefile"])
def test_an_unsupported_extension_is_refused_with_the_supported_ones(name: str) -> None:
    with pytest.raises(InvalidRequest, match=r"unsupported type; ingest text \(\.txt\), markdown"):
        readers.media_type_of_name(name)


@pytest.mark.parametrize(
    ("content_type", "path", "expected"),
    [
        ("text/html; charset=utf-8", "/", readers.HTML),
        ("text/plain", "/README.md", readers.MARKDOWN),
        ("application/octet-stream", "/guide.pdf", readers.PDF),
        ("", "/data.json", readers.JSON),
    ],
)
def test_a_fetched_url_is_read_by_its_content_type_or_its_suffix(content_type: str, path: str, expected: str) -> None:
    assert readers.media_type_of_response(content_type, path) == expected


def test_a_fetched_url_of_an_unsupported_type_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="Content-Type 'image/png'"):
        readers.media_type_of_response("image/png", "/logo.png")
