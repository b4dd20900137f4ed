"""Every metric of the knowledge service (prefix saip_knowledge_); labels are bounded: source kinds and outcomes."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

KINDS = ("path", "url", "text")
INGEST_OUTCOMES = ("ok", "refused", "failed")


class KnowledgeMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.ingests = Counter(
            "saip_knowledge_ingests",
            "Document ingests by source kind (path, url, text) and outcome (ok, refused, failed)",
            ["kind", "outcome"],
            registry=registry,
        )
        self.ingested_chunks = Counter(
            "saip_knowledge_ingested_chunks", "Chunks indexed by successful ingests", registry=registry
        )
        self.ingest_seconds = Histogram(
            "saip_knowledge_ingest_seconds",
            "Time to read, chunk, encode, index and commit one document",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=registry,
        )
        self.searches = Counter(
            "saip_knowledge_searches",
            "Searches by way in (search: the API and saip_knowledge_search; tool: a published knowledge tool)",
            ["via"],
            registry=registry,
        )
        self.search_seconds = Histogram(
            "saip_knowledge_search_seconds",
            "Time of one search: encode the query, query the index, apply the pipeline",
            ["via"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=registry,
        )
        self.documents = Gauge("saip_knowledge_documents", "Documents in the catalog", registry=registry)
        self.pipelines = Gauge("saip_knowledge_pipelines", "Pipelines in the catalog", registry=registry)
        self.tools = Gauge("saip_knowledge_published_tools", "Published knowledge tools", registry=registry)
        for kind in KINDS:
            for outcome in INGEST_OUTCOMES:
                self.ingests.labels(kind, outcome)
        for via in ("search", "tool"):
            self.searches.labels(via)
            self.search_seconds.labels(via)
