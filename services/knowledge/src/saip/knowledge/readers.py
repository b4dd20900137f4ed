"""Readers: the text of a document from its bytes, by media type (plain text, markdown, HTML, JSON, PDF)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from saip.common import jsondepth
from saip.knowledge.errors import InvalidRequest

TEXT = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
JSON = "application/json"
PDF = "application/pdf"

SUFFIXES = {
    ".txt": TEXT,
    ".text": TEXT,
    ".log": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".json": JSON,
    ".pdf": PDF,
}
# Content types a server may send for the same kinds.
CONTENT_TYPES = {
    TEXT: TEXT,
    MARKDOWN: MARKDOWN,
    "text/x-markdown": MARKDOWN,
    HTML: HTML,
    "application/xhtml+xml": HTML,
    JSON: JSON,
    "application/ld+json": JSON,
    PDF: PDF,
}
# Types that say nothing about the content; the URL's suffix decides then.
GENERIC = {"", "application/octet-stream", "binary/octet-stream"}
SUPPORTED = "text (.txt), markdown (.md), HTML (.html), JSON (.json) or PDF (.pdf)"
PAGE_BREAK = "\f"


@dataclass(frozen=True)
class Parsed:
    """A document's text; a PDF's pages are separated by form feeds, so a chunk's page can be computed."""

    text: str
    media_type: str
    title: str
    pages: int = 0


def media_type_of_name(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    shown = f"'{suffix}'" if suffix else "no extension"
    raise InvalidRequest(f"'{name}' has {shown}, an unsupported type; ingest {SUPPORTED}")


def media_type_of_response(content_type: str, url_path: str) -> str:
    """The reader for a fetched URL: the Content-Type, or the path's suffix when the type is generic."""
    message = Message()
    message["content-type"] = content_type or ""
    declared = message.get_content_type() if content_type else ""
    if declared in CONTENT_TYPES:
        # A server often sends text/plain for a .md file; the suffix is more precise then.
        if declared == TEXT and PurePosixPath(url_path).suffix.lower() in (".md", ".markdown"):
            return MARKDOWN
        return CONTENT_TYPES[declared]
    if declared in GENERIC:
        return media_type_of_name(url_path or "document")
    raise InvalidRequest(f"the URL answered with Content-Type '{declared}', an unsupported type; ingest {SUPPORTED}")


def read(data: bytes, media_type: str, name: str) -> Parsed:
    """The text of `data`; refuses binary, undecodable, malformed or empty content with the reason."""
    if media_type == PDF:
        parsed = _pdf(data, name)
    else:
        text = _decode(data, name)
        match media_type:
            case "text/markdown":
                parsed = Parsed(text, media_type, _markdown_title(text))
            case "text/html":
                parsed = _html(text)
            case "application/json":
                parsed = _json(text, name)
            case "text/plain":
                parsed = Parsed(text, media_type, "")
            case _:
                raise InvalidRequest(f"'{media_type}' is not a supported type; ingest {SUPPORTED}")
    if not parsed.text.strip():
        raise InvalidRequest(f"'{name}' has no text to ingest; send a document with some text in it")
    return parsed


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:8192]:
        raise InvalidRequest(f"'{name}' looks binary (it holds NUL bytes); ingest a text document or a PDF")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"'{name}' is not UTF-8 text (byte {exc.start} cannot be decoded); convert it to UTF-8 first"
        ) from None


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _markdown_title(text: str) -> str:
    # A heading's match starts at most three characters before its first '#', so the search starts there: a text
    # without a '#' is not searched line by line, and what is found is what a search from the start finds.
    first = text.find("#")
    found = _HEADING.search(text, max(0, first - 3)) if first >= 0 else None
    return found.group(1).strip() if found else ""


class _HtmlText(HTMLParser):
    """The visible text of a page: no scripts, styles or head; blocks become paragraphs, list items and rows lines."""

    SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
    BLOCK = frozenset(
        {
            "p", "div", "ul", "ol", "table", "section", "article", "header", "footer", "nav", "main", "aside",
            "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "figure", "dl",
        }
    )  # fmt: skip
    LINE = frozenset({"br", "li", "tr", "dt", "dd"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")
        elif tag in self.LINE:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skipping:
            self.parts.append(data)


def _html(text: str) -> Parsed:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    lines = (re.sub(r"[ \t\r\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return Parsed(body, HTML, " ".join("".join(parser.title_parts).split()))


def _leaves(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    elif value is not None and value != "":
        yield f"{path or 'value'}: {value}"


def _json(text: str, name: str) -> Parsed:
    """JSON as one `path: value` line per leaf, so every value is searchable next to its key."""
    try:
        data = jsondepth.loads(text)
    except jsondepth.TooDeep as exc:
        raise InvalidRequest(f"'{name}' is refused: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"'{name}' is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    title = ""
    if isinstance(data, dict):
        title = next((str(data[key]) for key in ("title", "name") if isinstance(data.get(key), str)), "")
    return Parsed("\n".join(_leaves(data, "")), JSON, title)


def _pdf(data: bytes, name: str) -> Parsed:
    if not data.startswith(b"%PDF-"):
        raise InvalidRequest(f"'{name}' is not a PDF (it does not start with %PDF-); check the file")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InvalidRequest(f"'{name}' is an encrypted PDF; ask the person for an unprotected copy")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = str(reader.metadata.title or "") if reader.metadata else ""
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise InvalidRequest(f"'{name}' cannot be read as a PDF ({type(exc).__name__}: {exc})") from None
    if not any(page.strip() for page in pages):
        raise InvalidRequest(f"'{name}' has no extractable text (a scanned PDF needs OCR first)")
    return Parsed(PAGE_BREAK.join(page.replace(PAGE_BREAK, " ") for page in pages), PDF, title, len(pages))
