"""The knowledge service over gRPC: the methods the saip_knowledge_* tools, the REST API and the CLI share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from saip.gateway.published import SERVING, ServedToolsClient
from saip.v1 import knowledge_pb2 as pb
from saip.v1 import knowledge_pb2_grpc

INGEST_DEADLINE = 600.0  # a large PDF takes a while to read and index; progress flows meanwhile


class KnowledgeClient(ServedToolsClient):
    def __init__(self, address: str, *, deadline: float = 10.0) -> None:
        super().__init__(SERVING["knowledge"], address, deadline=deadline)
        self._stub = knowledge_pb2_grpc.KnowledgeServiceStub(self._channel)  # type: ignore[no-untyped-call]

    async def ingest(self, request: pb.IngestDocumentRequest) -> AsyncIterator[pb.IngestEvent]:
        """The ingest's progress events, then its result; leaving early cancels the ingest (nothing is kept)."""
        stream = self._stub.IngestDocument(request, timeout=INGEST_DEADLINE)
        try:
            async for event in stream:
                yield event
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        finally:
            stream.cancel()

    async def documents(self) -> pb.ListDocumentsReply:
        return await self._call(self._stub.ListDocuments, pb.ListDocumentsRequest())

    async def delete_document(self, name: str) -> pb.DeleteDocumentReply:
        return await self._call(self._stub.DeleteDocument, pb.DeleteDocumentRequest(name=name))

    async def pipelines(self) -> pb.ListPipelinesReply:
        return await self._call(self._stub.ListPipelines, pb.ListPipelinesRequest())

    async def apply_pipeline(self, request: pb.ApplyPipelineRequest) -> pb.ApplyPipelineReply:
        return await self._call(self._stub.ApplyPipeline, request)

    async def delete_pipeline(self, name: str) -> pb.DeletePipelineReply:
        return await self._call(self._stub.DeletePipeline, pb.DeletePipelineRequest(name=name))

    async def search(self, request: pb.SearchRequest) -> pb.SearchReply:
        return await self._call(self._stub.Search, request)

    async def suggest_tools(self, pipeline: str) -> pb.SuggestToolsReply:
        return await self._call(self._stub.SuggestTools, pb.SuggestToolsRequest(pipeline=pipeline))

    async def publish_tool(self, request: pb.PublishKnowledgeToolRequest) -> pb.PublishKnowledgeToolReply:
        return await self._call(self._stub.PublishTool, request)

    async def unpublish_tool(self, name: str) -> pb.UnpublishKnowledgeToolReply:
        return await self._call(self._stub.UnpublishTool, pb.UnpublishKnowledgeToolRequest(name=name))

    async def status(self) -> pb.GetKnowledgeStatusReply:
        return await self._call(self._stub.GetStatus, pb.GetKnowledgeStatusRequest())
