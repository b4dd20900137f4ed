"""Search: a pipeline's scope ranked for a query, lexically (BM25) and, with the dense encoder, by meaning, the two
rankings fused (reciprocal rank fusion); the pipeline's threshold drops weak passages and its rerank setting orders
the rest by score or in reading order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from saip.common import tracing
from saip.knowledge import sparse
from saip.knowledge.config import MAX_TOP_K
from saip.knowledge.errors import InvalidRequest
from saip.knowledge.items import default_pipeline
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.pipelines import Pipelines
from saip.knowledge.ports import Dense, Hit
from saip.v1 import knowledge_pb2

FUSED = 4  # with the dense encoder, each ranking brings this many times the passages asked for before fusion
RRF_K = 60  # the usual reciprocal rank fusion constant
MAX_QUERY = 2000

_SPANS = tracing.tracer("knowledge")


@dataclass(frozen=True)
class SearchResult:
    hits: list[tuple[Hit, knowledge_pb2.Document, float]]  # hit, its document, relevance
    pipeline: knowledge_pb2.Pipeline
    dropped: int


class Search:
    def __init__(self, knowledge: Knowledge, pipelines: Pipelines) -> None:
        self._knowledge = knowledge
        self._pipelines = pipelines

    async def search(self, pipeline_name: str, query: str, top_k: int | None = None) -> SearchResult:
        query = query.strip()
        if not query:
            raise InvalidRequest("the query is empty; ask a question or give keywords")
        if len(query) > MAX_QUERY:
            raise InvalidRequest(f"the query is {len(query)} characters; use at most {MAX_QUERY}")
        if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"topK must be between 1 and {MAX_TOP_K}, not {top_k}")
        pipeline = self._pipelines.named(pipeline_name) if pipeline_name.strip() else default_pipeline()
        documents = {document.ingest_id: document for document in self._pipelines.scope(pipeline)}
        vector = sparse.encode_query(query)
        dense = await _encoded(self._knowledge.dense, query)
        if not vector and dense is None:
            raise InvalidRequest(
                "the query has no searchable words (only stop words, punctuation or single letters); "
                "use the words the documents would contain"
            )
        if not documents:
            return SearchResult([], self._pipelines.shown(pipeline), 0)
        limit = top_k or pipeline.top_k
        wanted = limit if dense is None else limit * FUSED
        with _SPANS.span("qdrant query", attributes={"saip.pipeline": pipeline_name, "saip.kind": "lexical"}):
            lexical = await self._knowledge.index.search(vector, list(documents), wanted) if vector else []
        # Neither BM25 sums nor one model's cosines have a scale that means the same for every query and corpus, so a
        # passage's relevance is its score relative to the best of the same query in that ranking; a passage found
        # by both rankings keeps the better one.
        relevance = relative(lexical)
        if dense is None:
            ranked = lexical
        else:
            with _SPANS.span("qdrant query", attributes={"saip.pipeline": pipeline_name, "saip.kind": "dense"}):
                semantic = await self._knowledge.index.search_dense(dense[0], list(documents), wanted)
            for key, value in relative(semantic).items():
                relevance[key] = max(relevance.get(key, 0.0), value)
            ranked = fuse(lexical, semantic)[:limit]
        above = chosen(ranked, relevance, documents, pipeline.threshold, rerank=pipeline.rerank)
        return SearchResult(above, self._pipelines.shown(pipeline), len(ranked) - len(above))


def chosen(
    ranked: Sequence[Hit],
    relevance: dict[tuple[str, int], float],
    documents: dict[str, knowledge_pb2.Document],
    threshold: float,
    *,
    rerank: bool,
) -> list[tuple[Hit, knowledge_pb2.Document, float]]:
    """The hits at or above the threshold, with their documents: by score (`rerank`), else in reading order (the
    order of `documents`, then the position). A shipped knowledge tool answers with the same rule."""
    kept = [(hit, documents[hit.ingest_id], relevance[(hit.ingest_id, hit.position)]) for hit in ranked]
    above = [entry for entry in kept if entry[2] >= threshold]
    if rerank:
        above.sort(key=lambda entry: -entry[0].score)
    else:
        order = {ingest_id: rank for rank, ingest_id in enumerate(documents)}
        above.sort(key=lambda entry: (order[entry[0].ingest_id], entry[0].position))
    return above


def relative(ranking: Sequence[Hit]) -> dict[tuple[str, int], float]:
    best = ranking[0].score if ranking else 0.0
    if best <= 0:
        return {}
    return {(hit.ingest_id, hit.position): max(hit.score, 0.0) / best for hit in ranking}


def fuse(*rankings: Sequence[Hit]) -> list[Hit]:
    """Reciprocal rank fusion: each ranking gives a chunk 1 / (RRF_K + rank); the sums, best first, are the scores."""
    scores: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.ingest_id, hit.position)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: -scores[key])
    return [replace(first[key], score=scores[key]) for key in ordered]


def hit_json(hit: Hit, document: knowledge_pb2.Document, relevance: float) -> dict[str, Any]:
    return {
        "document": document.name,
        "source": document.source,
        "position": hit.position,
        "start": hit.start,
        "end": hit.end,
        "page": hit.page or None,
        "score": round(hit.score, 4),
        "relevance": round(relevance, 4),
        "text": hit.text,
    }


async def _encoded(dense: Dense | None, query: str) -> list[list[float]] | None:
    """The query's dense vector, when there is a dense encoder."""
    if dense is None:
        return None
    return await anyio.to_thread.run_sync(dense.encode, [query])
