"""Wiring of the knowledge service: its lifespan opens NATS (catalog, originals, risk events), Qdrant, the rules,
and the gRPC API with /metrics, and closes them in reverse, draining what is in flight. The servicer converts
protobuf to domain calls and back; errors become statuses at the RPC edge (`RpcEdge`).
"""

from __future__ import annotations

import functools
import json
import logging
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import grpc
from prometheus_client import REGISTRY, CollectorRegistry

from saip.common import bus, call_arguments, jetstream, lifecycle, tracing
from saip.common.grpc_server import Endpoints, RpcEdge, endpoints
from saip.common.netguard import NetworkMode
from saip.common.risk import RiskPublisher
from saip.common.watch import Restarts, keep_alive
from saip.knowledge.clients import GuardedFetcher, KvCatalog, ObjectOriginals
from saip.knowledge.config import KnowledgeSettings
from saip.knowledge.dense import DenseEncoder
from saip.knowledge.edge import EdgeIndex, LocalModeFolder
from saip.knowledge.errors import AlreadyExists, InvalidRequest, KnowledgeError, NotFound, Refused, StoreUnavailable
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.metrics import KnowledgeMetrics
from saip.knowledge.rules import Rules
from saip.v1 import common_pb2, knowledge_pb2, knowledge_pb2_grpc

if TYPE_CHECKING:
    from saip.knowledge.qdrant import QdrantIndex

logger = logging.getLogger(__name__)

SERVICE_NAME = "saip.v1.KnowledgeService"
STOP_GRACE = 3.0
START_WITHIN = 60.0
SNAPSHOT_PIECE = 1024 * 1024  # bytes a snapshot message carries, well under gRPC's 4 MiB message limit

# The status of each of the service's errors: a parallel table, one in every service's server.py.
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


class KnowledgeServicer(knowledge_pb2_grpc.KnowledgeServiceServicer):
    """saip.v1.KnowledgeService over the documents, the pipelines, search and the knowledge tools (an RPC it does
    not implement is the generated base's UNIMPLEMENTED)."""

    def __init__(self, rules: Rules, catalog: KvCatalog, metrics: KnowledgeMetrics) -> None:
        self._rules = rules
        self._catalog = catalog
        self._metrics = metrics

    # A stream written as the ingest goes (`context.write`, grpc.aio's other form of a stream, which the generated
    # stub does not know): each batch indexed is a progress event, from inside the ingest.
    @_unary
    async def IngestDocument(  # type: ignore[override]
        self, request: knowledge_pb2.IngestDocumentRequest, context: Any
    ) -> None:
        kind = request.WhichOneof("source")
        if kind is None:
            raise InvalidRequest("give one of path (absolute, inside an ingest root), url, text or an uploaded file")
        knowledge = self._rules.knowledge

        async def progress(done: int, total: int, message: str) -> None:
            step = knowledge_pb2.IngestProgress(done=done, total=total, message=message)
            await context.write(knowledge_pb2.IngestEvent(progress=step))

        started = time.perf_counter()
        try:
            # A caller that goes away cancels the call, and with it the ingest, which cleans up after itself.
            if kind == "upload":
                loaded = knowledge.uploaded(request.upload.filename, request.upload.content)
                document, created = await knowledge.ingest_loaded(loaded, request.name, progress=progress)
            else:
                document, created = await knowledge.ingest(
                    kind, getattr(request, kind), request.name, progress=progress
                )
        except (InvalidRequest, NotFound, AlreadyExists, Refused):
            self._metrics.ingests.labels(kind, "refused").inc()
            raise
        except BaseException:
            self._metrics.ingests.labels(kind, "failed").inc()
            raise
        self._metrics.ingests.labels(kind, "ok").inc()
        self._metrics.ingested_chunks.inc(document.chunks)
        self._metrics.ingest_seconds.observe(time.perf_counter() - started)
        done = knowledge_pb2.IngestedDocument(document=document, created_default_pipeline=created)
        await context.write(knowledge_pb2.IngestEvent(done=done))

    @_unary
    async def ListDocuments(
        self, request: knowledge_pb2.ListDocumentsRequest, context: Any
    ) -> knowledge_pb2.ListDocumentsReply:
        return knowledge_pb2.ListDocumentsReply(documents=self._rules.knowledge.documents())

    @_unary
    async def GetDocument(self, request: knowledge_pb2.GetDocumentRequest, context: Any) -> knowledge_pb2.Document:
        return self._rules.knowledge.described(request.name)

    @_unary
    async def DeleteDocument(
        self, request: knowledge_pb2.DeleteDocumentRequest, context: Any
    ) -> knowledge_pb2.DeleteDocumentReply:
        document, chunks = await self._rules.knowledge.delete_document(
            request.name, expected=request.expected_fingerprint
        )
        return knowledge_pb2.DeleteDocumentReply(document=document, chunks_deleted=chunks)

    @_unary
    async def ListPipelines(
        self, request: knowledge_pb2.ListPipelinesRequest, context: Any
    ) -> knowledge_pb2.ListPipelinesReply:
        return knowledge_pb2.ListPipelinesReply(pipelines=self._rules.pipelines.every())

    @_unary
    async def GetPipeline(self, request: knowledge_pb2.GetPipelineRequest, context: Any) -> knowledge_pb2.Pipeline:
        return self._rules.pipelines.shown(self._rules.pipelines.named(request.name))

    @_unary
    async def ApplyPipeline(
        self, request: knowledge_pb2.ApplyPipelineRequest, context: Any
    ) -> knowledge_pb2.ApplyPipelineReply:
        pipeline, created = await self._rules.pipelines.apply(
            request.name,
            list(request.documents),
            top_k=request.top_k if request.HasField("top_k") else None,
            threshold=request.threshold if request.HasField("threshold") else None,
            rerank=request.rerank if request.HasField("rerank") else None,
        )
        return knowledge_pb2.ApplyPipelineReply(pipeline=pipeline, created=created)

    @_unary
    async def DeletePipeline(
        self, request: knowledge_pb2.DeletePipelineRequest, context: Any
    ) -> knowledge_pb2.DeletePipelineReply:
        deleted = await self._rules.pipelines.delete(request.name, expected=request.expected_fingerprint)
        return knowledge_pb2.DeletePipelineReply(pipeline=deleted)

    @_unary
    async def Search(self, request: knowledge_pb2.SearchRequest, context: Any) -> knowledge_pb2.SearchReply:
        started = time.perf_counter()
        top_k = request.top_k if request.HasField("top_k") else None
        found = await self._rules.search.search(request.pipeline, request.query, top_k)
        self._metrics.searches.labels("search").inc()
        self._metrics.search_seconds.labels("search").observe(time.perf_counter() - started)
        return knowledge_pb2.SearchReply(
            hits=_search_hits(found), pipeline=found.pipeline, dropped_below_threshold=found.dropped
        )

    @_unary
    async def SuggestTools(
        self, request: knowledge_pb2.SuggestToolsRequest, context: Any
    ) -> knowledge_pb2.SuggestToolsReply:
        suggestions = [
            knowledge_pb2.ToolSuggestion(
                name=found.name,
                description=found.description,
                pipeline=found.pipeline,
                documents=found.documents,
                published_as=", ".join(found.published_as),
            )
            for found in self._rules.tools.suggest(request.pipeline)
        ]
        return knowledge_pb2.SuggestToolsReply(suggestions=suggestions)

    @_unary
    async def PublishTool(
        self, request: knowledge_pb2.PublishKnowledgeToolRequest, context: Any
    ) -> knowledge_pb2.PublishKnowledgeToolReply:
        tool = await self._rules.tools.publish(
            request.name, request.description, request.pipeline, request.expected_fingerprint
        )
        return knowledge_pb2.PublishKnowledgeToolReply(tool=tool)

    @_unary
    async def GetTool(
        self, request: knowledge_pb2.GetKnowledgeToolRequest, context: Any
    ) -> knowledge_pb2.KnowledgeTool:
        return self._rules.tools.named(request.name)

    @_unary
    async def UnpublishTool(
        self, request: knowledge_pb2.UnpublishKnowledgeToolRequest, context: Any
    ) -> knowledge_pb2.UnpublishKnowledgeToolReply:
        tool = await self._rules.tools.unpublish(request.name, request.expected_fingerprint)
        return knowledge_pb2.UnpublishKnowledgeToolReply(tool=tool)

    @_unary
    async def GetStatus(
        self, request: knowledge_pb2.GetKnowledgeStatusRequest, context: Any
    ) -> knowledge_pb2.GetKnowledgeStatusReply:
        status = await self._rules.knowledge.status()
        return knowledge_pb2.GetKnowledgeStatusReply(tools=self._rules.tools.every(), **status)

    @_unary
    async def DescribeTool(
        self, request: knowledge_pb2.DescribeKnowledgeToolRequest, context: Any
    ) -> knowledge_pb2.KnowledgeToolDefinition:
        await self._catalog.current()
        return self._rules.tools.definition(request.name)

    @_streaming  # the definition, then the snapshot archive in pieces
    async def SnapshotTool(
        self, request: knowledge_pb2.DescribeKnowledgeToolRequest, context: Any
    ) -> AsyncIterator[knowledge_pb2.SnapshotPiece]:
        await self._catalog.current()
        with tempfile.TemporaryDirectory(prefix="saip-snapshot-") as scratch:
            target = Path(scratch) / "tool.snapshot"
            definition = await self._rules.tools.snapshot(request.name, target)
            yield knowledge_pb2.SnapshotPiece(definition=definition)
            async with await anyio.open_file(target, "rb") as archive:
                while piece := await archive.read(SNAPSHOT_PIECE):
                    yield knowledge_pb2.SnapshotPiece(data=piece)

    @_unary
    async def ListServedTools(
        self, request: common_pb2.ListServedToolsRequest, context: Any
    ) -> common_pb2.ListServedToolsReply:
        await self._catalog.current()
        return common_pb2.ListServedToolsReply(tools=self._rules.tools.served())

    @_unary
    async def CallServedTool(
        self, request: common_pb2.CallServedToolRequest, context: Any
    ) -> common_pb2.CallServedToolReply:
        """A knowledge tool's answer; bad arguments and refusals are the tool's own error result, not a failure."""
        started = time.perf_counter()
        try:
            arguments = call_arguments.read(request.name, request.arguments_json)
            answer = await self._rules.tools.call(request.name, arguments)
        except (call_arguments.BadArguments, InvalidRequest, NotFound, Refused) as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc))
        self._metrics.searches.labels("tool").inc()
        self._metrics.search_seconds.labels("tool").observe(time.perf_counter() - started)
        text = json.dumps(answer, ensure_ascii=False)
        return common_pb2.CallServedToolReply(text=text, structured_json=text)


@dataclass(frozen=True)
class Running(Endpoints):
    """The running knowledge service: where it listens, its metrics, its documents, and what of the declared
    configuration could not be applied."""

    metrics: KnowledgeMetrics
    knowledge: Knowledge
    problems: list[str]


@asynccontextmanager
async def lifespan(
    settings: KnowledgeSettings, *, registry: CollectorRegistry = REGISTRY, url_mode: NetworkMode = NetworkMode.STRICT
) -> AsyncIterator[Running]:
    """Open the knowledge service: NATS and the catalog's watch, the originals, Qdrant, the documents re-indexed where
    the index lost them, the declared configuration applied, then the gRPC API. On the way out the API drains first
    (its writes still see the catalog's watch), then the watch stops, Qdrant closes and NATS drains."""
    metrics = KnowledgeMetrics(registry)
    restarts = Restarts()
    secrets = settings.secrets()  # before anything is opened: a malformed file stops the start
    async with AsyncExitStack() as stack:
        nc = await stack.enter_async_context(
            bus.connection(
                settings.nats_url, "knowledge", within=START_WITHIN, reconnected=restarts.reconnected, grace=STOP_GRACE
            )
        )
        await stack.enter_async_context(tracing.traced(settings, nc))
        js = nc.jetstream()
        await jetstream.ensure_stream(js, jetstream.audit_stream_config(settings))  # risk events go to the audit stream
        catalog = await KvCatalog.open(js)
        catalog.on_change = lambda: metrics.count(catalog)
        group = await lifecycle.background(stack)
        group.start_soon(functools.partial(keep_alive, catalog.watch, "knowledge catalog", restarts=restarts))
        with anyio.fail_after(START_WITHIN):
            await catalog.ready()
        originals = await ObjectOriginals.open(js)
        dense = _dense_encoder(settings)
        shape = (dense.fingerprint[:12], dense.dimension) if dense else None
        index: QdrantIndex | EdgeIndex
        earlier: LocalModeFolder | None = None
        if settings.qdrant_location:
            # Imported only for a Qdrant server: qdrant-client's import is CPU the embedded default (Edge) would
            # otherwise spend at every start (docs/BENCHMARKS.md, "Cold start").
            from saip.knowledge.qdrant import QdrantIndex

            index = await QdrantIndex.open(settings.qdrant_location, settings.qdrant_path, dense=shape)
        else:
            index = await EdgeIndex.open(settings.edge_path, dense=shape)
            earlier = await anyio.to_thread.run_sync(LocalModeFolder.find, settings.qdrant_path)
        stack.push_async_callback(index.close)
        roots = settings.ingest_roots
        if not settings.knowledge_ingest_roots:
            roots[0].mkdir(parents=True, exist_ok=True)
        knowledge = Knowledge(
            catalog=catalog,
            originals=originals,
            index=index,
            fetcher=GuardedFetcher(RiskPublisher(nc, "knowledge"), url_mode),
            roots=roots,
            max_bytes=settings.knowledge_max_document_bytes,
            dense=dense,
            secrets=secrets,
        )
        rules = Rules.over(knowledge)
        if earlier is not None:
            earlier.announce()
        reindexed = await knowledge.reindex()
        if reindexed:
            logger.info("documents re-indexed from their originals", extra={"documents": reindexed})
        if earlier is not None:
            await earlier.retire(index, knowledge.documents())
        problems = await rules.declared.apply(settings.knowledge_documents, settings.knowledge_pipelines)
        servicer = KnowledgeServicer(rules, catalog, metrics)
        register = functools.partial(knowledge_pb2_grpc.add_KnowledgeServiceServicer_to_server, servicer)
        said = {
            "vector_store": index.describe(),
            "ingest_roots": [str(root) for root in roots],
            "documents": len(catalog.documents()),
        }
        served = await stack.enter_async_context(
            endpoints(settings, [(SERVICE_NAME, register)], registry=registry, grace=STOP_GRACE, said=said)
        )
        yield Running(served.port, served.metrics_port, metrics, knowledge, problems)


def _dense_encoder(settings: KnowledgeSettings) -> DenseEncoder | None:
    model, tokenizer = settings.knowledge_dense_model, settings.knowledge_dense_tokenizer
    if model is None or tokenizer is None:
        return None
    return DenseEncoder(model, tokenizer)
