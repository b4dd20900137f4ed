"""The lexical encoder: content words only, plural folded, BM25 term weights, the same index on every replica."""

from __future__ import annotations

import zlib

from saip.knowledge import sparse


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
