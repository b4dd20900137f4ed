"""Knowledge in the embedded default, Qdrant Edge: ingest throughput (chunks/s) and search latency through
`Knowledge.search` (the pipeline rules included) at 10,000 chunks, against a brute-force scan of the same vectors in
numpy (the baseline), with a check that Edge's top-5 scores are the numpy dot product's (the same BM25 x IDF
scoring), ties aside; then 100,000 chunks ingested through the knowledge service as a process (by path, over gRPC),
with the service's memory read from /proc and the search latency at that size. Each ingest also reports the CPU time
its process spent per chunk (all threads, the engine's included), a figure the load of a shared machine inflates far
less than the wall-clock rate.

`SAIP_BENCH_KNOWLEDGE_CHUNKS=10000` runs only the 10,000-chunk part (about a minute), to measure a change to ingest
or search without the six minutes of the 100,000-chunk part."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import grpc
import numpy as np

from bench import procstat
from bench.stats import summary, table
from saip.common import bus
from saip.common.natsd import LocalNats, free_port
from saip.common.watch import keep_alive
from saip.knowledge import chunking, sparse
from saip.knowledge.clients import GuardedFetcher, KvCatalog, ObjectOriginals
from saip.knowledge.edge import EdgeIndex
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.rules import Rules
from saip.v1 import knowledge_pb2, knowledge_pb2_grpc

DOCUMENTS = 20
LARGE_DOCUMENTS = 200  # 100,000 chunks
CHUNKS_PER_DOCUMENT = 500
SENTENCES = 38  # a paragraph of 38 sentences of 19 words is about 760 tokens: one chunk each
WORDS_PER_SENTENCE = 19
QUERIES = 200
TOP_K = 5
VOCABULARY = 2000
SEED = 21
MIB = 1 << 20
# The parts to run: 10,000 is the in-process part alone; anything larger (the default) adds the 100,000-chunk part.
CHUNKS = int(os.environ.get("SAIP_BENCH_KNOWLEDGE_CHUNKS", "100000"))


def _words(rng: random.Random) -> list[str]:
    """A vocabulary of made-up words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


def _documents(words: list[str], count: int, seed: int) -> Iterator[str]:
    """Documents of CHUNKS_PER_DOCUMENT paragraphs whose words follow Zipf's law, as the words of real prose do."""
    generator = np.random.default_rng(seed)
    vocabulary = np.array(words, dtype=object)
    weights = 1 / np.arange(1, len(words) + 1)
    per_paragraph = SENTENCES * WORDS_PER_SENTENCE
    for _ in range(count):
        drawn = generator.choice(len(words), size=(CHUNKS_PER_DOCUMENT, per_paragraph), p=weights / weights.sum())
        paragraphs = []
        for row in vocabulary[drawn]:
            tokens: list[str] = row.tolist()
            ends = slice(WORDS_PER_SENTENCE - 1, None, WORDS_PER_SENTENCE)
            tokens[ends] = [token + "." for token in tokens[ends]]
            paragraphs.append(" ".join(tokens))
        yield "\n\n".join(paragraphs)


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
            matrix[row, [self.column[index] for index in vector.indices]] = vector.values
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


async def _searched(rules: Rules, queries: Sequence[str]) -> tuple[list[float], list[list[float]]]:
    """Each query's latency (ms) through the search rules (`Search.search`) and its top scores, after 20 warm-up
    queries."""
    for query in queries[:20]:
        await rules.search.search("", query, TOP_K)
    latency, tops = [], []
    for query in queries:
        begin = time.perf_counter()
        found = await rules.search.search("", query, TOP_K)
        latency.append((time.perf_counter() - begin) * 1000)
        tops.append([hit.score for hit, _, _ in found.hits])
    return latency, tops


class _Service:
    """The knowledge service in-process over a home's NATS bucket and Edge folder (the service's own code)."""

    def __init__(self, nats: LocalNats, home: Path) -> None:
        self._nats, self._home = nats, home

    async def __aenter__(self) -> Rules:
        self._nc = await bus.connect(self._nats.url, "bench", within=10)
        js = self._nc.jetstream()
        self._index = await EdgeIndex.open(self._home / "qdrant-edge")
        self._catalog = await KvCatalog.open(js)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(keep_alive, self._catalog.watch, "catalog")
        await self._catalog.ready()
        knowledge = Knowledge(
            catalog=self._catalog,
            originals=await ObjectOriginals.open(js),
            index=self._index,
            fetcher=GuardedFetcher(None),
            roots=[self._home],
            max_bytes=1 << 30,
        )
        return Rules.over(knowledge)

    async def __aexit__(self, *exc: object) -> None:
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)
        await self._index.close()
        await self._nc.close()


async def _small(home: Path, words: list[str], queries: list[str]) -> tuple[list[list[object]], list[float], float]:
    """10,000 chunks in-process: ingest, search, and the baseline over the same chunks."""
    documents = list(_documents(words, DOCUMENTS, SEED))
    nats = LocalNats(home / "nats")
    nats.start()
    try:
        async with _Service(nats, home) as rules:
            started, cpu_started = time.perf_counter(), time.process_time()
            chunks = 0
            for number, text in enumerate(documents):
                document, _ = await rules.knowledge.ingest("text", text, f"bench-{number}")
                chunks += document.chunks
            ingest_seconds = time.perf_counter() - started
            cpu_ms = (time.process_time() - cpu_started) * 1000 / chunks
            edge_ms, edge_top = await _searched(rules, queries)
    finally:
        nats.stop()

    baseline = _Baseline([piece.text for text in documents for piece in chunking.chunk(text)])
    numpy_ms, agreement = [], []
    for query, found_top in zip(queries, edge_top, strict=True):
        vector = baseline.query(query)
        begin = time.perf_counter()
        baseline.top(baseline.unit, vector)
        numpy_ms.append((time.perf_counter() - begin) * 1000)
        # The same scoring as Qdrant's (dot product with IDF): the top scores must be the same.
        expected = baseline.top(baseline.dot, vector)
        agreement.append(len(expected) == len(found_top) and np.allclose(expected, found_top, rtol=1e-3))
    rows = [
        ["ingest (read, chunk, encode, index, commit)", chunks, ingest_seconds, chunks / ingest_seconds, cpu_ms],
        ["brute-force cosine in numpy, same vectors (baseline)", *summary(numpy_ms).values()],
        [f"Qdrant Edge, the search rules at {chunks} chunks", *summary(edge_ms).values()],
    ]
    return rows, edge_ms, sum(agreement) / len(agreement)


def _start_service(nats: LocalNats, home: Path, docs: Path, port: int) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SAIP_", "QDRANT_"))}
    env.update(
        {
            "SAIP_HOME": str(home),
            "SAIP_NATS_URL": nats.url,
            "SAIP_KNOWLEDGE_PORT": str(port),
            "SAIP_KNOWLEDGE_METRICS_PORT": str(free_port()),
            "SAIP_KNOWLEDGE_INGEST_ROOTS": str(docs),
            "SAIP_LOG_LEVEL": "WARNING",
        }
    )
    return subprocess.Popen([sys.executable, "-m", "saip.knowledge"], env=env, stdout=subprocess.DEVNULL)


async def _large(home: Path, words: list[str], queries: list[str]) -> list[list[object]]:
    """100,000 chunks through the knowledge service as a process; then the same folder searched in-process."""
    docs = home / "docs"
    docs.mkdir(parents=True)
    for number, text in enumerate(_documents(words, LARGE_DOCUMENTS, SEED + 1)):
        (docs / f"bench-{number:03}.md").write_text(text)
    nats = LocalNats(home / "nats")
    nats.start()
    port = free_port()
    service = _start_service(nats, home, docs, port)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = knowledge_pb2_grpc.KnowledgeServiceStub(channel)  # type: ignore[no-untyped-call]
            await channel.channel_ready()
            with anyio.fail_after(60):
                while True:
                    try:
                        await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
                        break
                    except grpc.aio.AioRpcError:  # still starting
                        await anyio.sleep(0.1)
            idle = procstat.memory(service.pid)
            started, cpu_started = time.perf_counter(), procstat.cpu_seconds(service.pid)
            for path in sorted(docs.iterdir()):
                async for _ in stub.IngestDocument(knowledge_pb2.IngestDocumentRequest(path=str(path))):
                    pass
            ingest_seconds = time.perf_counter() - started
            cpu_seconds = procstat.cpu_seconds(service.pid) - cpu_started
            chunks = (await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())).chunks
            loaded = procstat.memory(service.pid)
            grpc_ms = []
            for query in [*queries[:20], *queries]:
                begin = time.perf_counter()
                await stub.Search(knowledge_pb2.SearchRequest(query=query, top_k=TOP_K))
                grpc_ms.append((time.perf_counter() - begin) * 1000)
            searched = procstat.memory(service.pid)
    finally:
        service.terminate()
        service.wait(timeout=30)
    try:
        async with _Service(nats, home) as rules:
            edge_ms, _ = await _searched(rules, queries)
    finally:
        nats.stop()
    on_disk = sum(path.stat().st_size for path in (home / "qdrant-edge").rglob("*") if path.is_file()) / MIB
    return [
        [
            "ingest through the service (by path, over gRPC)",
            chunks,
            ingest_seconds,
            chunks / ingest_seconds,
            cpu_seconds * 1000 / chunks,
        ],
        [f"Qdrant Edge, the search rules at {chunks} chunks", *summary(edge_ms).values()],
        ["the service's Search over gRPC, same chunks", *summary(grpc_ms[20:]).values()],
        ["service memory, started, no documents", idle["VmRSS"], idle["RssAnon"], idle["VmHWM"]],
        [f"service memory, {chunks} chunks ingested", loaded["VmRSS"], loaded["RssAnon"], loaded["VmHWM"]],
        [f"service memory, after {len(grpc_ms)} searches", searched["VmRSS"], searched["RssAnon"], searched["VmHWM"]],
        ["the Edge folder on disk (MiB)", on_disk, "", ""],
    ]


def run() -> str:
    rng = random.Random(SEED)
    words = _words(rng)
    queries = _queries(rng, words)
    with tempfile.TemporaryDirectory() as home:
        small, _, agreement = anyio.run(_small, Path(home), words, queries)
    tables = [
        table(
            f"Knowledge ingest, {DOCUMENTS} documents of ~{CHUNKS_PER_DOCUMENT} chunks, in-process (Qdrant Edge)",
            ["", "chunks", "seconds", "chunks/s", "CPU ms a chunk"],
            small[:1],
        ),
        table(f"Knowledge search, top {TOP_K}, {QUERIES} queries (ms)", ["", "p50", "p90", "p99", "mean"], small[1:]),
        f"Queries whose top-{TOP_K} scores equal the numpy dot product's (Qdrant's scoring): {agreement:.0%}",
    ]
    if CHUNKS <= DOCUMENTS * CHUNKS_PER_DOCUMENT:
        return "\n\n".join(tables)
    with tempfile.TemporaryDirectory() as home:
        large = anyio.run(_large, Path(home), words, queries)
    return "\n\n".join(
        [
            *tables,
            table(
                f"{LARGE_DOCUMENTS} documents through the knowledge service as a process",
                ["", "chunks", "seconds", "chunks/s", "CPU ms a chunk"],
                large[:1],
            ),
            table(f"Search at {large[0][1]} chunks, top {TOP_K} (ms)", ["", "p50", "p90", "p99", "mean"], large[1:3]),
            table("The service's memory (MiB)", ["", "RSS", "of which heap", "peak RSS"], large[3:]),
        ]
    )
