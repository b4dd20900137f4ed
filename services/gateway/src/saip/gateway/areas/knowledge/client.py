"""The knowledge service over the gateway's channel to it: the methods the saip_knowledge_* tools, the REST API and
the command line share."""

from __future__ import annotations

from collections.abc import AsyncIterator

from saip.gateway.clients import ServiceChannel
from saip.v1 import knowledge_pb2 as pb
from saip.v1.knowledge_pb2_grpc import KnowledgeServiceStub

INGEST_DEADLINE = 600.0  # a large PDF takes a while to read and index; progress flows meanwhile


class KnowledgeClient:
    def __init__(self, channel: ServiceChannel) -> None:
        self._channel = channel

    def _stub(self) -> KnowledgeServiceStub:
        return self._channel.stub(KnowledgeServiceStub)

    async def ingest(self, request: pb.IngestDocumentRequest) -> AsyncIterator[pb.IngestEvent]:
        """The ingest's progress events, then its result; leaving early cancels the ingest (nothing is kept)."""
        async for event in self._channel.stream(lambda: self._stub().IngestDocument(request, timeout=INGEST_DEADLINE)):
            yield event

    async def documents(self) -> pb.ListDocumentsReply:
        return await self._channel.call(self._stub().ListDocuments, pb.ListDocumentsRequest())

    # An expected fingerprint is what an approval described; the service changes exactly that or refuses (empty: as is).

    async def document(self, name: str) -> pb.Document:
        return await self._channel.call(self._stub().GetDocument, pb.GetDocumentRequest(name=name))

    async def delete_document(self, name: str, expected: str = "") -> pb.DeleteDocumentReply:
        request = pb.DeleteDocumentRequest(name=name, expected_fingerprint=expected)
        return await self._channel.call(self._stub().DeleteDocument, request)

    async def pipelines(self) -> pb.ListPipelinesReply:
        return await self._channel.call(self._stub().ListPipelines, pb.ListPipelinesRequest())

    async def apply_pipeline(self, request: pb.ApplyPipelineRequest) -> pb.ApplyPipelineReply:
        return await self._channel.call(self._stub().ApplyPipeline, request)

    async def pipeline(self, name: str) -> pb.Pipeline:
        return await self._channel.call(self._stub().GetPipeline, pb.GetPipelineRequest(name=name))

    async def delete_pipeline(self, name: str, expected: str = "") -> pb.DeletePipelineReply:
        request = pb.DeletePipelineRequest(name=name, expected_fingerprint=expected)
        return await self._channel.call(self._stub().DeletePipeline, request)

    async def search(self, request: pb.SearchRequest) -> pb.SearchReply:
        return await self._channel.call(self._stub().Search, request)

    async def suggest_tools(self, pipeline: str) -> pb.SuggestToolsReply:
        return await self._channel.call(self._stub().SuggestTools, pb.SuggestToolsRequest(pipeline=pipeline))

    async def publish_tool(self, request: pb.PublishKnowledgeToolRequest) -> pb.PublishKnowledgeToolReply:
        return await self._channel.call(self._stub().PublishTool, request)

    async def tool(self, name: str) -> pb.KnowledgeTool:
        return await self._channel.call(self._stub().GetTool, pb.GetKnowledgeToolRequest(name=name))

    async def unpublish_tool(self, name: str, expected: str = "") -> pb.UnpublishKnowledgeToolReply:
        request = pb.UnpublishKnowledgeToolRequest(name=name, expected_fingerprint=expected)
        return await self._channel.call(self._stub().UnpublishTool, request)

    async def status(self) -> pb.GetKnowledgeStatusReply:
        return await self._channel.call(self._stub().GetStatus, pb.GetKnowledgeStatusRequest())
