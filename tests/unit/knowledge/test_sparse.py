"""The lexical encoder: content words only, plural folded, BM25 term weights, the same index on every replica."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saip.knowledge import chunking, sparse


def test_terms_drop_stop_words_and_fold_plurals() -> None:
    assert sparse.terms("The gateways and THE documents of a class, nats and status") == [
        "gateway",
        "document",
        "class",
        "nats",
        "status",
    ]


def test_a_term_index_is_its_crc32() -> None:
    [index] = sparse.encode_query("nats").indices
    assert index == zlib.crc32(b"nats")


def test_a_query_weighs_each_distinct_term_once() -> None:
    query = sparse.encode_query("restart nats restart NATS")
    assert sorted(query.values) == [1.0, 1.0]


def test_a_document_weight_saturates_with_repetition() -> None:
    once = sparse.encode_document("restart broker").as_dict()
    many = sparse.encode_document("restart " * 50 + "broker").as_dict()
    restart = zlib.crc32(b"restart")
    assert once[restart] < many[restart] < sparse.K1 + 1


def test_a_longer_text_weighs_a_term_less() -> None:
    restart = zlib.crc32(b"restart")
    short = sparse.encode_document("restart broker").as_dict()[restart]
    long = sparse.encode_document("restart " + "filler words here " * 100).as_dict()[restart]
    assert long < short


def test_only_stop_words_is_an_empty_vector() -> None:
    assert not sparse.encode_query("the and of a")


def test_keywords_are_the_most_frequent_content_words() -> None:
    text = "Qdrant stores vectors. Qdrant filters vectors by payload. Qdrant is fast."
    assert sparse.keywords(text, limit=3) == ["qdrant", "vectors", "stores"]


# Any text: letters of every script, digits, punctuation, underscores, and Unicode spaces.
_TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=300) | st.lists(
    st.sampled_from(["Gateways", "the", "NATS", "status", "a", "_", "x_y", "9", "étés", "—", "..", "\u2003", "\n", " "])
).map("".join)


def _reference_encoding(text: str) -> dict[int, float]:
    """BM25 weights straight from the definition: the terms in order, counted, saturated."""
    found = sparse.terms(text)
    norm = sparse.K1 * (1 - sparse.B + sparse.B * len(found) / sparse.AVERAGE_TERMS)
    weights: dict[int, float] = {}
    for term, frequency in Counter(found).items():
        index = sparse.term_index(term)
        weights[index] = weights.get(index, 0.0) + frequency * (sparse.K1 + 1) / (frequency + norm)
    return weights


@given(_TEXTS)
@settings(max_examples=300, deadline=None)
def test_a_document_is_encoded_as_its_terms_define(text: str) -> None:
    assert sparse.encode_document(text).as_dict() == pytest.approx(_reference_encoding(text))


@given(_TEXTS)
@settings(max_examples=300, deadline=None)
def test_keywords_are_counted_in_the_order_the_words_first_occur(text: str) -> None:
    found = [word for word in sparse.words(text) if len(word) > 2 and not word.isdigit()]
    counts = Counter(sparse.fold(word) for word in found)
    shown = {sparse.fold(word): word for word in reversed(found)}  # the first form written of each
    assert sparse.keywords(text, limit=5) == [shown[term] for term, _ in counts.most_common(5)]


def test_a_singular_and_its_plural_are_one_keyword_shown_as_first_written() -> None:
    text = "The night shifts start at ten. A night shift ends at six. Shifts swap on Fridays."
    assert sparse.keywords(text, limit=3) == ["shifts", "night", "start"]  # shifts, shift, Shifts: three


@given(_TEXTS, st.integers(min_value=1, max_value=40))
@settings(max_examples=300, deadline=None)
def test_the_keywords_counted_while_encoding_apart_chunks_are_the_texts(text: str, max_tokens: int) -> None:
    chunks = chunking.chunk(text, max_tokens=max_tokens, min_chars=1)
    tally: Counter[str] = Counter()
    vectors = [sparse.encode_document(piece.text, tally) for piece in chunks]
    assert vectors == [sparse.encode_document(piece.text) for piece in chunks]  # the tally changes no vector
    if chunking.apart(chunks):
        assert sparse.keywords_counted(tally, limit=5) == sparse.keywords(text, limit=5)
