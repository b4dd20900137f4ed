"""Lexical sparse vectors: BM25 term weights computed locally, with Qdrant applying IDF (no model, no download).

A term is a lower-cased run of letters or digits, not a stop word, with a plural 's' folded; its index is the CRC32
of its text, so every replica encodes the same way without a shared vocabulary. A document's weight for a term is
BM25's saturated term frequency; a query's is 1 per distinct term, and the collection's IDF modifier supplies the
rest of BM25 at search time.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass

K1 = 1.2
B = 0.75
# Chunks are about the same length (~800 tokens, ~300 content terms), so a fixed average stands in for the corpus's.
AVERAGE_TERMS = 300.0

NAME = "lexical-bm25"

_WORD = re.compile(r"[^\W_]+")
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being below between both but
    by can could did do does doing down during each few for from further had has have having he her here hers herself
    him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves also may might must shall us via per etc
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __bool__(self) -> bool:
        return bool(self.indices)

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.indices, self.values, strict=True))


def fold(word: str) -> str:
    """Fold the plural 's' (documents -> document) so singular and plural match; 'ss', 'us', 'is' endings and words
    of four letters or fewer (nats, docs, gas) stay as they are."""
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Content words, lower-cased, in order (stop words dropped); the surface forms, before folding."""
    return [
        word for word in _WORD.findall(text.casefold()) if word not in STOPWORDS and (len(word) > 1 or word.isdigit())
    ]


def terms(text: str) -> list[str]:
    return [fold(word) for word in words(text)]


def term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8"))


def _vector(weights: dict[int, float]) -> SparseVector:
    ordered = sorted(weights.items())
    return SparseVector(tuple(index for index, _ in ordered), tuple(value for _, value in ordered))


def encode_document(text: str) -> SparseVector:
    found = terms(text)
    length_norm = K1 * (1 - B + B * len(found) / AVERAGE_TERMS)
    weights: dict[int, float] = {}
    for term, frequency in Counter(found).items():
        index = term_index(term)
        # Two terms with one CRC32 (rare) add up rather than overwrite each other.
        weights[index] = weights.get(index, 0.0) + frequency * (K1 + 1) / (frequency + length_norm)
    return _vector(weights)


def encode_query(text: str) -> SparseVector:
    return _vector({term_index(term): 1.0 for term in set(terms(text))})


def keywords(text: str, limit: int = 8) -> list[str]:
    """The most frequent content words of a text (3+ letters, not numbers), for names and descriptions."""
    counts = Counter(word for word in words(text) if len(word) > 2 and not word.isdigit())
    return [word for word, _ in counts.most_common(limit)]
