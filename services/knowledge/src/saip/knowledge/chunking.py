"""Chunking: about 800 tokens a chunk, never shorter than 350 characters, cut at paragraph and sentence bounds.

A token here is a word or a punctuation mark (`\\w+|[^\\w\\s]`), close to what sentence-embedding tokenizers count
for English prose. Each chunk is an exact slice of the document's text, so its character offsets are its position,
and there is only whitespace outside the chunks: between two chunks (none at all where a paragraph too long for one
chunk is cut between two tokens), before the first and after the last.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

MAX_TOKENS = 800
MIN_CHARS = 350

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PARAGRAPH = re.compile(r"\n\s*\n|\f")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    start: int
    end: int
    page: int = 0


@functools.lru_cache(maxsize=1 << 16)
def _tokens_in(piece: str) -> int:
    return len(_TOKEN.findall(piece))


def count_tokens(text: str) -> int:
    """The tokens of `text`; no token spans whitespace, so they are counted per whitespace-separated piece, and a
    piece of letters and digits only (most of them) is one token without running the pattern."""
    pieces = text.split()
    others = list(itertools.filterfalse(str.isalnum, pieces))
    return len(pieces) - len(others) + sum(map(_tokens_in, others))


def _spans(text: str, matches: Iterable[re.Match[str]], start: int, end: int) -> Iterator[tuple[int, int]]:
    """The pieces of text[start:end] between `matches` (in order, within those bounds), trimmed of surrounding
    whitespace."""
    cursor = start
    for match in matches:
        yield from _trimmed(text, cursor, match.start())
        cursor = match.end()
    yield from _trimmed(text, cursor, end)


def paragraph_breaks(text: str) -> Iterator[re.Match[str]]:
    """What `_PARAGRAPH.finditer(text)` finds. A break starts at a newline or a form feed, so the pattern is tried
    only where `str.find` (a memchr) finds one, not at every character of the text."""
    size = len(text)

    def next_one(char: str, start: int) -> int:
        found = text.find(char, start)
        return found if found >= 0 else size

    newline, feed = next_one("\n", 0), next_one("\f", 0)
    while (at := min(newline, feed)) < size:
        match = _PARAGRAPH.match(text, at)
        if match:
            yield match
        following = match.end() if match else at + 1
        if newline < following:
            newline = next_one("\n", following)
        if feed < following:
            feed = next_one("\f", following)


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        yield start, end


def _atoms(text: str, max_tokens: int) -> Iterator[tuple[int, int, int]]:
    """(start, end, tokens) pieces no larger than max_tokens: paragraphs, else sentences, else token windows."""
    for p_start, p_end in _spans(text, paragraph_breaks(text), 0, len(text)):
        tokens = count_tokens(text[p_start:p_end])
        if tokens <= max_tokens:
            yield p_start, p_end, tokens
            continue
        for s_start, s_end in _spans(text, _SENTENCE.finditer(text, p_start, p_end), p_start, p_end):
            tokens = count_tokens(text[s_start:s_end])
            if tokens <= max_tokens:
                yield s_start, s_end, tokens
                continue
            matches = list(_TOKEN.finditer(text, s_start, s_end))
            for first in range(0, len(matches), max_tokens):
                window = matches[first : first + max_tokens]
                yield window[0].start(), window[-1].end(), len(window)


def chunk(text: str, *, max_tokens: int = MAX_TOKENS, min_chars: int = MIN_CHARS, paged: bool = False) -> list[Chunk]:
    """Pack the pieces greedily up to max_tokens; a chunk under min_chars takes the next piece even past the limit,
    and a short tail joins the chunk before it. `paged` text (a PDF's) has its pages separated by form feeds, and
    each chunk gets the page it starts on."""
    spans: list[tuple[int, int]] = []
    start = end = tokens = -1
    for a_start, a_end, a_tokens in _atoms(text, max_tokens):
        if start < 0:
            start, end, tokens = a_start, a_end, a_tokens
        elif tokens + a_tokens > max_tokens and end - start >= min_chars:
            spans.append((start, end))
            start, end, tokens = a_start, a_end, a_tokens
        else:
            end, tokens = a_end, tokens + a_tokens
    if start >= 0:
        if spans and end - start < min_chars:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    breaks = [match.start() for match in re.finditer("\f", text)] if paged else []
    return [
        Chunk(index, text[s:e], s, e, bisect.bisect_right(breaks, s) + 1 if paged else 0)
        for index, (s, e) in enumerate(spans)
    ]


def apart(chunks: Sequence[Chunk]) -> bool:
    """Whether whitespace separates each chunk from the next: then no piece of text without whitespace spans two
    chunks, and the pieces of the chunks, in order, are exactly the pieces of the whole text."""
    return all(before.end < after.start for before, after in itertools.pairwise(chunks))
