"""The person's side of the knowledge area under /api/v1/knowledge: the methods the saip_knowledge_* tools call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import Field

from saip.gateway.contributions.knowledge import (
    IngestInput,
    KnowledgeContribution,
    PipelineInput,
    PublishInput,
    SearchInput,
    SuggestInput,
)
from saip.gateway.management import Caller, Input

if TYPE_CHECKING:
    from saip.gateway.server import Gateway

PERSON = Caller(client_name="rest-api")


class PipelineBody(Input):
    """PUT /knowledge/pipelines/{name}: the pipeline's settings; the name is in the path."""

    documents: list[str] = Field(default_factory=list, max_length=500)
    topK: int | None = Field(default=None, ge=1, le=50)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    rerank: bool | None = None


def router(gateway: Gateway) -> APIRouter:
    api = APIRouter(prefix="/knowledge", tags=["knowledge"])

    def area() -> KnowledgeContribution:
        if gateway.knowledge is None:
            raise HTTPException(
                503, "The knowledge service is not configured: set knowledge.addr (SAIP_KNOWLEDGE_ADDR) and restart."
            )
        return gateway.knowledge

    @api.get("/status", summary="Documents, chunks, pipelines, published tools, ingest roots")
    async def status() -> Any:
        return (await area().status()).data

    @api.get("/documents", summary="The ingested documents")
    async def documents() -> Any:
        return (await area().documents()).data

    @api.post("/documents", summary="Ingest one document by absolute path, public URL or text")
    async def ingest(body: IngestInput) -> Any:
        return (await area().ingest(body, PERSON)).data

    @api.delete("/documents/{name}", summary="Delete a document, its chunks and its original")
    async def delete_document(name: str) -> Any:
        return (await area().delete_document(name)).data

    @api.get("/pipelines", summary="The pipelines")
    async def pipelines() -> Any:
        return (await area().pipelines()).data

    @api.put("/pipelines/{name}", summary="Create or update a pipeline")
    async def apply_pipeline(name: str, body: PipelineBody) -> Any:
        arguments = PipelineInput(name=name, **body.model_dump())
        return (await area().apply_pipeline(arguments)).data

    @api.delete("/pipelines/{name}", summary="Delete a pipeline (its documents stay)")
    async def delete_pipeline(name: str) -> Any:
        return (await area().delete_pipeline(name)).data

    @api.post("/search", summary="Search a pipeline's documents")
    async def search(body: SearchInput) -> Any:
        return (await area().search(body)).data

    @api.get("/suggestions", summary="Knowledge tools proposed from each pipeline's documents")
    async def suggestions(pipeline: Annotated[str | None, Query(max_length=200)] = None) -> Any:
        return (await area().suggest(SuggestInput(pipeline=pipeline))).data

    @api.get("/tools", summary="The published knowledge tools")
    async def tools() -> Any:
        return {"tools": (await area().status()).data["tools"]}

    @api.post("/tools", summary="Publish a knowledge tool on /mcp")
    async def publish(body: PublishInput) -> Any:
        return (await area().publish_tool(body)).data

    @api.delete("/tools/{name}", summary="Unpublish a knowledge tool")
    async def unpublish(name: str) -> Any:
        return (await area().unpublish_tool(name)).data

    return api
