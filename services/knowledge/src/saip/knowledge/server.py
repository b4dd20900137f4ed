"""Wiring of the knowledge service: NATS (catalog, originals, risk events), Qdrant, the gRPC API and /metrics, and a
drain on SIGTERM. The servicer converts protobuf to domain calls and back;
errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY, CollectorRegistry

from saip.common import bus, lifecycle
from saip.common.grpc_server import GrpcServer, RpcEdge
from saip.common.metrics import MetricsServer, publish_build_info
from saip.common.netguard import NetworkMode
from saip.common.risk import RiskPublisher
from saip.knowledge.clients import GuardedFetcher, KvCatalog, ObjectOriginals, QdrantIndex
from saip.knowledge.config import KnowledgeSettings
from saip.knowledge.dense import DenseEncoder, DenseUnavailable
from saip.knowledge.edge import EdgeIndex, LocalModeFolder
from saip.knowledge.errors import (
    AlreadyExists,
    InvalidRequest,
    KnowledgeError,
    NotFound,
    Refused,
    StoreUnavailable,
)
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.metrics import KnowledgeMetrics
from saip.v1 import common_pb2, knowledge_pb2, knowledge_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.KnowledgeService"
STOP_GRACE = 3.0
START_WITHIN = 60.0

_EDGE = RpcEdge(
    "knowledge",
    KnowledgeError,
    {
        InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
        NotFound: grpc.StatusCode.NOT_FOUND,
        AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
        Refused: grpc.StatusCode.FAILED_PRECONDITION,
        StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    },
)
_unary = _EDGE.unary
_streaming = _EDGE.streaming


def _search_hits(found: Any) -> list[knowledge_pb2.SearchHit]:
    return [
        knowledge_pb2.SearchHit(
            document_id=document.id,
            document_name=document.name,
            position=hit.position,
            start=hit.start,
            end=hit.end,
            page=hit.page,
            score=hit.score,
            relevance=relevance,
            text=hit.text,
            source=document.source,
        )
        for hit, document, relevance in found.hits
    ]


class KnowledgeServicer:
    """saip.v1.KnowledgeService over the domain rules."""

    def __init__(self, knowledge: Knowledge, catalog: KvCatalog, metrics: KnowledgeMetrics) -> None:
        self._knowledge = knowledge
        self._catalog = catalog
        self._metrics = metrics

    @_streaming
    async def IngestDocument(self, request: Any, context: Any) -> AsyncIterator[knowledge_pb2.IngestEvent]:
        kind = request.WhichOneof("source")
        if kind is None:
            raise InvalidRequest("give one of path (absolute, inside an ingest root), url or text")
        events: asyncio.Queue[knowledge_pb2.IngestEvent | None] = asyncio.Queue()

        async def progress(done: int, total: int, message: str) -> None:
            step = knowledge_pb2.IngestProgress(done=done, total=total, message=message)
            events.put_nowait(knowledge_pb2.IngestEvent(progress=step))

        async def ingest() -> tuple[knowledge_pb2.Document, bool]:
            try:
                return await self._knowledge.ingest(kind, getattr(request, kind), request.name, progress=progress)
            finally:
                events.put_nowait(None)

        started = time.perf_counter()
        task = asyncio.create_task(ingest())
        try:
            while (event := await events.get()) is not None:
                yield event
            document, created = await task
        except (InvalidRequest, NotFound, AlreadyExists, Refused):
            self._metrics.ingests.labels(kind, "refused").inc()
            raise
        except BaseException:
            self._metrics.ingests.labels(kind, "failed").inc()
            raise
        finally:
            if not task.done():  # the caller went away: the ingest is cancelled and cleans up after itself
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._metrics.ingests.labels(kind, "ok").inc()
        self._metrics.ingested_chunks.inc(document.chunks)
        self._metrics.ingest_seconds.observe(time.perf_counter() - started)
        yield knowledge_pb2.IngestEvent(
            done=knowledge_pb2.IngestedDocument(document=document, created_default_pipeline=created)
        )

    @_unary
    async def ListDocuments(self, request: Any, context: Any) -> knowledge_pb2.ListDocumentsReply:
        return knowledge_pb2.ListDocumentsReply(documents=self._knowledge.documents())

    @_unary
    async def DeleteDocument(self, request: Any, context: Any) -> knowledge_pb2.DeleteDocumentReply:
        document, chunks = await self._knowledge.delete_document(request.name)
        return knowledge_pb2.DeleteDocumentReply(document=document, chunks_deleted=chunks)

    @_unary
    async def ListPipelines(self, request: Any, context: Any) -> knowledge_pb2.ListPipelinesReply:
        return knowledge_pb2.ListPipelinesReply(pipelines=self._knowledge.pipelines())

    @_unary
    async def ApplyPipeline(self, request: Any, context: Any) -> knowledge_pb2.ApplyPipelineReply:
        pipeline, created = await self._knowledge.apply_pipeline(
            request.name,
            list(request.documents),
            top_k=request.top_k if request.HasField("top_k") else None,
            threshold=request.threshold if request.HasField("threshold") else None,
            rerank=request.rerank if request.HasField("rerank") else None,
        )
        return knowledge_pb2.ApplyPipelineReply(pipeline=pipeline, created=created)

    @_unary
    async def DeletePipeline(self, request: Any, context: Any) -> knowledge_pb2.DeletePipelineReply:
        return knowledge_pb2.DeletePipelineReply(pipeline=await self._knowledge.delete_pipeline(request.name))

    @_unary
    async def Search(self, request: Any, context: Any) -> knowledge_pb2.SearchReply:
        started = time.perf_counter()
        top_k = request.top_k if request.HasField("top_k") else None
        found = await self._knowledge.search(request.pipeline, request.query, top_k)
        self._metrics.searches.labels("search").inc()
        self._metrics.search_seconds.labels("search").observe(time.perf_counter() - started)
        return knowledge_pb2.SearchReply(
            hits=_search_hits(found), pipeline=found.pipeline, dropped_below_threshold=found.dropped
        )

    @_unary
    async def SuggestTools(self, request: Any, context: Any) -> knowledge_pb2.SuggestToolsReply:
        suggestions = [
            knowledge_pb2.ToolSuggestion(
                name=found.name,
                description=found.description,
                pipeline=found.pipeline,
                documents=found.documents,
                published_as=", ".join(found.published_as),
            )
            for found in self._knowledge.suggest_tools(request.pipeline)
        ]
        return knowledge_pb2.SuggestToolsReply(suggestions=suggestions)

    @_unary
    async def PublishTool(self, request: Any, context: Any) -> knowledge_pb2.PublishKnowledgeToolReply:
        tool = await self._knowledge.publish_tool(request.name, request.description, request.pipeline)
        return knowledge_pb2.PublishKnowledgeToolReply(tool=tool)

    @_unary
    async def UnpublishTool(self, request: Any, context: Any) -> knowledge_pb2.UnpublishKnowledgeToolReply:
        return knowledge_pb2.UnpublishKnowledgeToolReply(tool=await self._knowledge.unpublish_tool(request.name))

    @_unary
    async def GetStatus(self, request: Any, context: Any) -> knowledge_pb2.GetKnowledgeStatusReply:
        status = await self._knowledge.status()
        return knowledge_pb2.GetKnowledgeStatusReply(tools=self._knowledge.tools(), **status)

    @_unary
    async def ListServedTools(self, request: Any, context: Any) -> common_pb2.ListServedToolsReply:
        await self._catalog.sync()
        return common_pb2.ListServedToolsReply(tools=self._knowledge.served_tools())

    @_unary
    async def CallServedTool(self, request: Any, context: Any) -> common_pb2.CallServedToolReply:
        """A knowledge tool's answer; bad arguments and refusals are the tool's own error result, not a failure."""
        started = time.perf_counter()
        try:
            arguments = json.loads(request.arguments_json or "{}")
            if not isinstance(arguments, dict):
                raise InvalidRequest("the arguments must be a JSON object with `query`")
            answer = await self._knowledge.call_tool(request.name, arguments)
        except json.JSONDecodeError:
            return common_pb2.CallServedToolReply(is_error=True, text="the arguments are not valid JSON")
        except (InvalidRequest, NotFound, Refused) as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc))
        self._metrics.searches.labels("tool").inc()
        self._metrics.search_seconds.labels("tool").observe(time.perf_counter() - started)
        text = json.dumps(answer, ensure_ascii=False)
        return common_pb2.CallServedToolReply(text=text, structured_json=text)


class KnowledgeApp:
    """One knowledge process: everything `start` opens, `stop` closes in reverse, draining what is in flight."""

    def __init__(
        self,
        settings: KnowledgeSettings,
        *,
        registry: CollectorRegistry = REGISTRY,
        url_mode: NetworkMode = NetworkMode.STRICT,
    ) -> None:
        self.settings = settings
        self.metrics = KnowledgeMetrics(registry)
        self._registry = registry
        self._url_mode = url_mode
        self.port = 0
        self.metrics_port = 0
        self.knowledge: Knowledge
        self.problems: list[str] = []
        self._nc: NatsClient | None = None
        self._catalog: KvCatalog | None = None
        self._index: QdrantIndex | EdgeIndex | None = None
        self._grpc: GrpcServer | None = None
        self._metrics_server: MetricsServer | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        settings = self.settings
        try:
            self._nc = await bus.connect(settings.nats_url, "knowledge", within=START_WITHIN, reconnected=self._back)
        except (OSError, TimeoutError) as exc:
            raise StoreUnavailable(f"NATS at {settings.nats_url} is not reachable ({type(exc).__name__})") from None
        js = self._nc.jetstream()
        await bus.ensure_stream(js, bus.audit_stream_config(settings))  # risk events go to the audit stream
        self._catalog = catalog = await KvCatalog.open(js)
        catalog.on_change = self._count
        self._tasks.append(asyncio.create_task(catalog.follow(), name="knowledge-catalog"))
        async with asyncio.timeout(START_WITHIN):
            await catalog.ready()
        originals = await ObjectOriginals.open(js)
        dense = self._dense_encoder()
        shape = (dense.fingerprint[:12], dense.dimension) if dense else None
        if settings.qdrant_location:
            self._index = await QdrantIndex.open(settings.qdrant_location, settings.qdrant_path, dense=shape)
            earlier = None
        else:
            self._index = await EdgeIndex.open(settings.edge_path, dense=shape)
            earlier = await asyncio.to_thread(LocalModeFolder.find, settings.qdrant_path)
        roots = settings.ingest_roots
        if not settings.knowledge_ingest_roots:
            roots[0].mkdir(parents=True, exist_ok=True)
        self.knowledge = Knowledge(
            catalog=catalog,
            originals=originals,
            index=self._index,
            fetcher=GuardedFetcher(RiskPublisher(self._nc, "knowledge"), self._url_mode),
            roots=roots,
            max_bytes=settings.knowledge_max_document_bytes,
            dense=dense,
        )
        if earlier is not None:
            earlier.announce()
        reindexed = await self.knowledge.reindex()
        if reindexed:
            logger.info("documents re-indexed from their originals", extra={"documents": reindexed})
        if earlier is not None:
            await earlier.retire(self._index, self.knowledge.documents())
        self.problems = await self.knowledge.apply_configuration(
            settings.knowledge_documents, settings.knowledge_pipelines
        )
        servicer = KnowledgeServicer(self.knowledge, catalog, self.metrics)
        self._grpc = GrpcServer(
            [(SERVICE_NAME, functools.partial(knowledge_pb2_grpc.add_KnowledgeServiceServicer_to_server, servicer))],
            settings.knowledge_host,
            settings.knowledge_port,
        )
        self.port = await self._grpc.start()
        self._metrics_server = MetricsServer(settings.knowledge_host, settings.knowledge_metrics_port, self._registry)
        self.metrics_port = self._metrics_server.port
        logger.info(
            "knowledge serving",
            extra={
                "grpc_port": self.port,
                "metrics_port": self.metrics_port,
                "vector_store": self._index.describe(),
                "ingest_roots": [str(root) for root in roots],
                "documents": len(catalog.documents()),
            },
        )

    def _dense_encoder(self) -> DenseEncoder | None:
        model, tokenizer = self.settings.knowledge_dense_model, self.settings.knowledge_dense_tokenizer
        if model is None or tokenizer is None:
            return None
        return DenseEncoder(model, tokenizer)

    def _count(self) -> None:
        if self._catalog is not None:
            self.metrics.documents.set(len(self._catalog.documents()))
            self.metrics.pipelines.set(len(self._catalog.pipelines()))
            self.metrics.tools.set(len(self._catalog.tools()))

    async def _back(self) -> None:
        if self._catalog is not None:
            self._catalog.restart()

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """NOT_SERVING, let in-flight calls finish, then close the watch, Qdrant and NATS."""
        if self._grpc is not None:
            await self._grpc.stop(grace)
        await lifecycle.cancel_all(self._tasks)
        if self._index is not None:
            await self._index.close()
        if self._nc is not None:
            await bus.close(self._nc, within=grace)
        if self._metrics_server is not None:
            self._metrics_server.stop()
        logger.info("knowledge stopped")

    async def failure(self) -> BaseException | None:
        """Wait until a background task ends, which only a fault does."""
        return await lifecycle.first_failure(self._tasks)


async def run(settings: KnowledgeSettings, shutdown: lifecycle.Shutdown) -> None:
    """Serve until SIGTERM or SIGINT; a background fault stops the service with exit code 1."""
    publish_build_info("knowledge")
    expected = (StoreUnavailable, OSError, TimeoutError, DenseUnavailable)
    await lifecycle.serve_app(KnowledgeApp(settings), shutdown, "knowledge", expected=expected)
