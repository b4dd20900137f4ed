"""Every metric of the knowledge service (prefix saip_knowledge_); labels are bounded: source kinds and outcomes."""

from __future__ import annotations

import itertools

from prometheus_client import REGISTRY, CollectorRegistry

from saip.common.metrics import Metrics, each
from saip.knowledge.ports import Catalog

KINDS = ("path", "url", "text")
INGEST_OUTCOMES = ("ok", "refused", "failed")
WAYS_IN = ("search", "tool")
INGEST_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class KnowledgeMetrics(Metrics):
    """The knowledge metrics on one registry, declared one entry each: a parallel table like every service's metrics
    object."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        super().__init__(registry)
        self.ingests = self.counter(
            "saip_knowledge_ingests",
            "Document ingests by source kind (path, url, text) and outcome (ok, refused, failed)",
            ["kind", "outcome"],
            known=itertools.product(KINDS, INGEST_OUTCOMES),
        )
        self.ingested_chunks = self.counter("saip_knowledge_ingested_chunks", "Chunks indexed by successful ingests")
        self.ingest_seconds = self.histogram(
            "saip_knowledge_ingest_seconds",
            "Time to read, chunk, encode, index and commit one document",
            buckets=INGEST_BUCKETS,
        )
        self.searches = self.counter(
            "saip_knowledge_searches",
            "Searches by way in (search: the API and saip_knowledge_search; tool: a published knowledge tool)",
            ["via"],
            known=each(*WAYS_IN),
        )
        self.search_seconds = self.histogram(
            "saip_knowledge_search_seconds",
            "Time of one search: encode the query, query the index, apply the pipeline",
            ["via"],
            buckets=SEARCH_BUCKETS,
            known=each(*WAYS_IN),
        )
        self.documents = self.gauge("saip_knowledge_documents", "Documents in the catalog")
        self.pipelines = self.gauge("saip_knowledge_pipelines", "Pipelines in the catalog")
        self.tools = self.gauge("saip_knowledge_published_tools", "Published knowledge tools")

    def count(self, catalog: Catalog) -> None:
        """The catalog's sizes, after each change the watch applies."""
        self.documents.set(len(catalog.documents()))
        self.pipelines.set(len(catalog.pipelines()))
        self.tools.set(len(catalog.tools()))
