"""Counted nouns read right at one and at any other count."""

from __future__ import annotations

from saip.common.words import plural


def test_one_is_singular_and_every_other_count_plural_irregular_ones_included() -> None:
    assert [plural(n, "upstream server") for n in (0, 1, 2)] == [
        "0 upstream servers",
        "1 upstream server",
        "2 upstream servers",
    ]
    assert [plural(n, "catalog entry", "catalog entries") for n in (1, 3)] == ["1 catalog entry", "3 catalog entries"]
