"""The person's side of the knowledge area under /api/v1/knowledge: the methods the saip_knowledge_* tools call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import Field

from saip.gateway.areas.knowledge import inputs
from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import Caller, Input

PERSON = Caller(client_name="rest-api")
Name = Annotated[str, Path(min_length=1, max_length=200, description="The exact name, as the list shows it")]
# Document and pipeline names are free text, so a slash in one is part of it (`{name:path}`): sent percent-encoded,
# as the command line sends every name, it still arrives decoded.


class PipelineBody(Input):
    """PUT /knowledge/pipelines/{name}: the pipeline's settings; the name is in the path."""

    documents: list[str] = Field(default_factory=list, max_length=500)
    topK: int | None = Field(default=None, ge=1, le=50)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    rerank: bool | None = None


def router(area: KnowledgeArea) -> APIRouter:
    api = area_router(
        "/knowledge",
        {
            "/status": ("Documents, chunks, pipelines, published tools, ingest roots", area.status),
            "/documents": ("The ingested documents (data.documents)", area.list_documents),
            "/pipelines": ("The pipelines (data.pipelines)", area.list_pipelines),
            "/tools": ("The published knowledge tools (data.tools)", area.published_tools),
        },
    )

    @api.post("/documents", summary="Ingest one document by absolute path, public URL or text")
    async def ingest(body: inputs.IngestInput) -> Envelope:
        return Envelope.of(await area.ingest_document(body, PERSON))

    @api.delete("/documents/{name:path}", summary="Delete a document, its chunks and its original")
    async def delete_document(name: Name) -> Envelope:
        return Envelope.of(await area.delete_document(inputs.NamedInput(name=name)))

    @api.put("/pipelines/{name:path}", summary="Create or update a pipeline")
    async def apply_pipeline(name: Name, body: PipelineBody) -> Envelope:
        return Envelope.of(await area.apply_pipeline(inputs.PipelineInput(name=name, **body.model_dump())))

    @api.delete("/pipelines/{name:path}", summary="Delete a pipeline (its documents stay)")
    async def delete_pipeline(name: Name) -> Envelope:
        return Envelope.of(await area.delete_pipeline(inputs.NamedInput(name=name)))

    @api.post("/search", summary="Search a pipeline's documents")
    async def search(body: inputs.SearchInput) -> Envelope:
        return Envelope.of(await area.search(body))

    @api.get("/suggestions", summary="Knowledge tools proposed from each pipeline's documents")
    async def suggestions(pipeline: Annotated[str | None, Query(max_length=200)] = None) -> Envelope:
        return Envelope.of(await area.suggest_tools(inputs.SuggestInput(pipeline=pipeline)))

    @api.post("/tools", summary="Publish a knowledge tool on /mcp")
    async def publish(body: inputs.PublishInput) -> Envelope:
        return Envelope.of(await area.publish_tool(body))

    @api.delete("/tools/{name}", summary="Unpublish a knowledge tool")
    async def unpublish(name: Name) -> Envelope:
        return Envelope.of(await area.unpublish_tool(inputs.NamedInput(name=name)))

    return api
