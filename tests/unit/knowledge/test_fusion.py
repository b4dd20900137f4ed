"""Reciprocal rank fusion of the lexical and the dense rankings."""

from __future__ import annotations

from saip.knowledge.ports import Hit
from saip.knowledge.search import RRF_K, fuse


def hit(ingest: str, position: int, score: float) -> Hit:
    return Hit(ingest, position, 0, 10, 0, score, f"{ingest}#{position}")


def test_a_passage_both_rankings_found_comes_before_one_found_once() -> None:
    lexical = [hit("a", 0, 9.0), hit("b", 3, 5.0)]
    dense = [hit("c", 1, 0.8), hit("b", 3, 0.7)]
    fused = fuse(lexical, dense)
    assert [(h.ingest_id, h.position) for h in fused] == [("b", 3), ("a", 0), ("c", 1)]
    assert fused[0].score == 1 / (RRF_K + 2) + 1 / (RRF_K + 2)
    assert fused[1].score == fused[2].score == 1 / (RRF_K + 1)


def test_one_ranking_alone_keeps_its_order() -> None:
    ranking = [hit("a", n, 10.0 - n) for n in range(5)]
    assert [h.position for h in fuse(ranking)] == [0, 1, 2, 3, 4]
    assert fuse() == []
