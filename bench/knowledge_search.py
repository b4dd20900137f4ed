"""Knowledge: ingest throughput (chunks/s) and search latency over 10,000 chunks in Qdrant's local mode, against a
brute-force cosine over the same vectors in numpy (the baseline); and a check that Qdrant's top-5 scores are the
numpy dot product's (the same BM25 x IDF scoring), ties aside."""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np

from bench.stats import summary, table
from saip.common import bus
from saip.common.natsd import LocalNats
from saip.common.watch import keep_alive
from saip.knowledge import chunking, sparse
from saip.knowledge.clients import GuardedFetcher, KvCatalog, ObjectOriginals
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.pipelines import Pipelines
from saip.knowledge.qdrant import QdrantIndex
from saip.knowledge.search import Search

DOCUMENTS = 20
CHUNKS_PER_DOCUMENT = 500
QUERIES = 100  # local mode scans every chunk per query, so a few minutes already
TOP_K = 5
VOCABULARY = 2000
SEED = 21


def _words(rng: random.Random) -> list[str]:
    """A vocabulary whose use follows Zipf's law, as the words of real prose do."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


def _corpus(rng: random.Random, words: list[str]) -> list[str]:
    """Documents of CHUNKS_PER_DOCUMENT paragraphs, each close to the 800-token chunk budget."""
    weights = [1 / (rank + 1) for rank in range(len(words))]
    documents = []
    for _ in range(DOCUMENTS):
        paragraphs = []
        for _ in range(CHUNKS_PER_DOCUMENT):
            sentences = [" ".join(rng.choices(words, weights, k=19)) + "." for _ in range(38)]
            paragraphs.append(" ".join(sentences))
        documents.append("\n\n".join(paragraphs))
    return documents


def _queries(rng: random.Random, words: list[str]) -> list[str]:
    """Two or three words of the middle of the vocabulary: specific enough to mean something."""
    middle = words[50:1000]
    return [" ".join(rng.sample(middle, rng.randint(2, 3))) for _ in range(QUERIES)]


class _Baseline:
    """Every chunk's BM25 vector times Qdrant's IDF, L2-normalised, as one dense float32 matrix."""

    def __init__(self, texts: list[str]) -> None:
        vectors = [sparse.encode_document(text) for text in texts]
        columns = sorted({index for vector in vectors for index in vector.indices})
        self.column = {index: position for position, index in enumerate(columns)}
        matrix = np.zeros((len(vectors), len(columns)), dtype=np.float32)
        for row, vector in enumerate(vectors):
            for index, value in zip(vector.indices, vector.values, strict=True):
                matrix[row, self.column[index]] = value
        df = (matrix > 0).sum(axis=0)
        n = len(vectors)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
        matrix *= self.idf  # what Qdrant scores: the sum of weight x IDF over the shared terms
        self.dot = matrix
        norms = np.linalg.norm(self.dot, axis=1, keepdims=True)
        self.unit = self.dot / np.where(norms == 0, 1, norms)

    def query(self, text: str) -> np.ndarray:
        vector = np.zeros(len(self.column), dtype=np.float32)
        for index in sparse.encode_query(text).indices:
            if index in self.column:
                vector[self.column[index]] = 1.0
        return vector

    def top(self, matrix: np.ndarray, query: np.ndarray) -> list[float]:
        """The top scores, best first (which of several equal-scoring chunks comes first is arbitrary)."""
        scores = matrix @ query
        best = np.argpartition(-scores, TOP_K)[:TOP_K]
        return sorted((float(scores[i]) for i in best if scores[i] > 0), reverse=True)


async def _run(home: Path) -> tuple[list[list[object]], list[list[object]], float]:
    rng = random.Random(SEED)
    words = _words(rng)
    documents = _corpus(rng, words)
    queries = _queries(rng, words)
    nats = LocalNats(home / "nats")
    nats.start()
    nc = await bus.connect(nats.url, "bench", within=10)
    index = await QdrantIndex.open(None, home / "qdrant")
    catalog = await KvCatalog.open(nc.jetstream())
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(keep_alive, catalog.watch, "catalog")
            await catalog.ready()
            knowledge = Knowledge(
                catalog=catalog,
                originals=await ObjectOriginals.open(nc.jetstream()),
                index=index,
                fetcher=GuardedFetcher(None),
                roots=[home],
                max_bytes=1 << 30,
            )
            search = Search(knowledge, Pipelines(knowledge))
            started = time.perf_counter()
            chunks = 0
            for number, text in enumerate(documents):
                document, _ = await knowledge.ingest("text", text, f"bench-{number}")
                chunks += document.chunks
            ingest_seconds = time.perf_counter() - started

            for query in queries[:20]:  # warm up
                await search.search("", query, TOP_K)
            qdrant_ms, qdrant_top = [], []
            for query in queries:
                begin = time.perf_counter()
                found = await search.search("", query, TOP_K)
                qdrant_ms.append((time.perf_counter() - begin) * 1000)
                qdrant_top.append([hit.score for hit, _, _ in found.hits])
            group.cancel_scope.cancel()
    finally:
        await index.close()
        await nc.close()
        nats.stop()

    texts = [piece.text for text in documents for piece in chunking.chunk(text)]
    baseline = _Baseline(texts)
    cosine_ms, agreement = [], []
    for query, found_top in zip(queries, qdrant_top, strict=True):
        vector = baseline.query(query)
        begin = time.perf_counter()
        baseline.top(baseline.unit, vector)
        cosine_ms.append((time.perf_counter() - begin) * 1000)
        # The same scoring as Qdrant's (dot product with IDF): the top scores must be the same.
        expected = baseline.top(baseline.dot, vector)
        agreement.append(np.allclose(expected, found_top, rtol=1e-3) if len(expected) == len(found_top) else False)
    latency = [
        ["brute-force cosine in numpy, same vectors (baseline)", *summary(cosine_ms).values()],
        ["Qdrant local mode, search through the pipeline rules", *summary(qdrant_ms).values()],
    ]
    ingest = [["ingest (read, chunk, encode, index, commit)", chunks, ingest_seconds, chunks / ingest_seconds]]
    return ingest, latency, sum(agreement) / len(agreement)


def run() -> str:
    with tempfile.TemporaryDirectory() as home:
        ingest, latency, agreement = anyio.run(_run, Path(home))
    chunks = ingest[0][1]
    return "\n\n".join(
        [
            table(
                f"Knowledge ingest, {DOCUMENTS} documents of ~{CHUNKS_PER_DOCUMENT} chunks (Qdrant local mode)",
                ["", "chunks", "seconds", "chunks/s"],
                ingest,
            ),
            table(
                f"Knowledge search over {chunks} chunks, top {TOP_K}, {QUERIES} queries (ms)",
                ["", "p50", "p90", "p99", "mean"],
                latency,
            ),
            f"Queries whose top-{TOP_K} scores equal the numpy dot product's (Qdrant's scoring): {agreement:.0%}",
        ]
    )
