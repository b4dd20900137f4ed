"""Chunks are about 800 tokens, at least 350 characters, exact slices of the text, cut at natural bounds."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from saip.knowledge.chunking import MAX_TOKENS, MIN_CHARS, apart, chunk, count_tokens, paragraph_breaks
from tests.unit.knowledge.samples import prose


def test_a_short_document_is_one_chunk() -> None:
    [only] = chunk("  A short note about restarting NATS.  ")
    assert (only.index, only.text, only.start, only.end, only.page) == (
        0,
        "A short note about restarting NATS.",
        2,
        37,
        0,
    )


def test_a_long_document_is_cut_near_the_token_budget_at_paragraph_bounds() -> None:
    text = prose(40)
    chunks = chunk(text)
    assert len(chunks) > 3
    for piece in chunks[:-1]:
        assert MAX_TOKENS * 0.8 <= count_tokens(piece.text) <= MAX_TOKENS
        assert text[piece.end : piece.end + 2] == "\n\n"  # a paragraph ends where a chunk does
    assert [piece.index for piece in chunks] == list(range(len(chunks)))


def test_every_chunk_is_the_slice_its_offsets_name() -> None:
    text = prose(12)
    for piece in chunk(text):
        assert text[piece.start : piece.end] == piece.text


def test_a_short_tail_joins_the_chunk_before_it() -> None:
    text = prose(9) + "\n\nThe end."
    chunks = chunk(text)
    assert chunks[-1].text.endswith("The end.")
    assert all(len(piece.text) >= MIN_CHARS for piece in chunks)


def test_a_paragraph_without_sentence_breaks_is_cut_by_tokens() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    chunks = chunk(text)
    assert [count_tokens(piece.text) for piece in chunks] == [800, 800, 400]


def test_pages_of_a_pdf_are_counted_from_its_form_feeds() -> None:
    text = "\f".join(prose(4, topic=f"page{page}") for page in range(1, 4))
    pages = [piece.page for piece in chunk(text, max_tokens=200, min_chars=50, paged=True)]
    assert pages[0] == 1 and pages == sorted(pages) and pages[-1] == 3


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .\n\f"), max_size=6000))
def test_chunks_cover_every_word_in_order_without_overlap(text: str) -> None:
    chunks = chunk(text, max_tokens=50, min_chars=20)
    assert "".join(piece.text for piece in chunks).split() == [
        word for piece in chunks for word in text[piece.start : piece.end].split()
    ]
    assert [w for w in text.split()] == [w for piece in chunks for w in piece.text.split()]
    assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
@settings(max_examples=300, deadline=None)
def test_tokens_are_counted_as_the_token_pattern_finds_them(text: str) -> None:
    assert count_tokens(text) == len(re.findall(r"\w+|[^\w\s]", text))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ab", "é\u0345", ".", "x_y", " ", "\n", "\u2003", "\f"]), max_size=120).map("".join))
def test_only_whitespace_lies_outside_the_chunks_and_apart_chunks_hold_the_texts_pieces(text: str) -> None:
    chunks = chunk(text, max_tokens=7, min_chars=3)
    bounds = [0, *(edge for piece in chunks for edge in (piece.start, piece.end)), len(text)]
    assert all(not text[start:end].strip() for start, end in zip(bounds[::2], bounds[1::2], strict=True))
    if apart(chunks):
        assert [word for piece in chunks for word in piece.text.casefold().split()] == text.casefold().split()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b.", " ", "\n", "\t", "\f", "\u2003"]), max_size=60).map("".join))
def testparagraph_breaks_are_those_of_the_paragraph_pattern(text: str) -> None:
    found = [match.span() for match in paragraph_breaks(text)]
    assert found == [match.span() for match in re.finditer(r"\n\s*\n|\f", text)]
