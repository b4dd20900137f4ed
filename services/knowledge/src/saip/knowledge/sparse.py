"""Lexical sparse vectors: BM25 term weights computed locally, with Qdrant applying IDF (no model, no download).

A term is a lower-cased run of letters or digits, not a stop word, with a plural 's' folded; its index is the CRC32
of its text, so every replica encodes the same way without a shared vocabulary. A document's weight for a term is
BM25's saturated term frequency; a query's is 1 per distinct term, and the collection's IDF modifier supplies the
rest of BM25 at search time.

Encoding is most of an ingest's time, so a text's terms are counted without running the word pattern over all of
it: the text is split at whitespace, each piece is looked up in a table of the pieces seen before (a new piece is
decided once: its words, which stop words it holds, its folds and indices), and `Counter` counts the terms of the
chained lookups. All of that runs in C but for the first sight of a piece, and the counts are exactly those of the
word pattern over the whole text. A document's keywords come from the same split: the encoder can count each
chunk's pieces into a tally, and `keywords_counted` reads them from it without a second pass over the text.
"""

from __future__ import annotations

import itertools
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
_CACHED = 1 << 17  # distinct pieces of text remembered: a large vocabulary, about 20 MB at most


@dataclass(frozen=True)
class SparseVector:
    """Term indices (each once, in no particular order: an adapter whose engine needs them sorted sorts them) and
    their weights."""

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


def _words_of(piece: str) -> tuple[str, ...]:
    """The words of a piece of text without whitespace; `_WORD` is a run of `isalnum` characters."""
    return (piece,) if piece.isalnum() else tuple(_WORD.findall(piece))


class _Pieces:
    """The pieces of text (runs without whitespace) seen so far, with the terms each holds, and each term's index.

    Both are plain dicts, so a lookup from C costs a hash. When they are full they are replaced by new ones, not
    cleared: an encoding on another thread may still be reading the old ones.
    """

    def __init__(self) -> None:
        self.terms: dict[str, tuple[str, ...]] = {}
        self.index: dict[str, int] = {}

    def holding(self, pieces: list[str]) -> _Pieces:
        """Tables that hold every one of `pieces` (a new piece is decided now)."""
        tables = self
        new = set(pieces).difference(tables.terms)
        if len(tables.terms) + len(new) > _CACHED:
            global _PIECES
            tables = _PIECES = _Pieces()
            new = set(pieces)
        for piece in new:
            found = tuple(
                fold(word) for word in _words_of(piece) if word not in STOPWORDS and (len(word) > 1 or word.isdigit())
            )
            for term in found:
                if term not in tables.index:
                    tables.index[term] = term_index(term)
            tables.terms[piece] = found
        return tables


_PIECES = _Pieces()


def pieces_of(text: str) -> list[str]:
    """The pieces the encoder looks up: the lower-cased text split at whitespace."""
    return text.casefold().split()


def encode_document(text: str, tally: Counter[str] | None = None) -> SparseVector:
    """A chunk's BM25 weights; `tally`, when given, also counts the chunk's pieces (for `keywords_counted`)."""
    pieces = pieces_of(text)
    if tally is not None:
        tally.update(pieces)
    tables = _PIECES
    try:
        # A lookup fails only on a piece never seen: most chunks hold none, and skip finding out which are new.
        frequencies = Counter(itertools.chain.from_iterable(map(tables.terms.__getitem__, pieces)))
    except KeyError:
        tables = tables.holding(pieces)
        frequencies = Counter(itertools.chain.from_iterable(map(tables.terms.__getitem__, pieces)))
    length_norm = K1 * (1 - B + B * frequencies.total() / AVERAGE_TERMS)
    # BM25's saturated frequency, computed once per distinct frequency (most are small) and looked up from C.
    saturated = {f: f * (K1 + 1) / (f + length_norm) for f in set(frequencies.values())}
    indices = tuple(map(tables.index.__getitem__, frequencies))
    values = tuple(map(saturated.__getitem__, frequencies.values()))
    if len(set(indices)) == len(indices):
        return SparseVector(indices, values)
    weights: dict[int, float] = {}  # two terms with one CRC32 (rare) add up rather than overwrite each other
    for index, value in zip(indices, values, strict=True):
        weights[index] = weights.get(index, 0.0) + value
    return SparseVector(tuple(weights), tuple(weights.values()))


def encode_query(text: str) -> SparseVector:
    indices = tuple({term_index(term) for term in terms(text)})
    return SparseVector(indices, (1.0,) * len(indices))


def keywords(text: str, limit: int = 8) -> list[str]:
    """The most frequent content words of a text (3+ letters, not numbers), for names and descriptions."""
    return keywords_counted(Counter(pieces_of(text)), limit)


def keywords_counted(tally: Counter[str], limit: int = 8) -> list[str]:
    """The keywords of a text from the count of its pieces (`pieces_of`) in the order they first occur, a singular
    and its plural counted as one (`fold`) and shown as first written: what `keywords` finds in the text. Each
    distinct piece is split into words once, and a word is first seen in the piece of its first occurrence, so ties
    are broken, as in the text, by which word came first."""
    counts: Counter[str] = Counter()  # by folded word: "shift" and "shifts" are one keyword
    shown: dict[str, str] = {}  # a folded word -> the form it first occurred in, which is what is shown
    for piece, count in tally.items():
        for word in _words_of(piece):
            if len(word) > 2 and not word.isdigit() and word not in STOPWORDS:
                term = fold(word)
                shown.setdefault(term, word)
                counts[term] += count
    return [shown[term] for term, _ in counts.most_common(limit)]
