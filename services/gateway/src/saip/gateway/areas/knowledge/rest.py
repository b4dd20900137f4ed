"""The person's side of the knowledge area under /api/v1/knowledge: the methods the saip_knowledge_* tools call, and
an ingest that streams its progress (NDJSON) when the request asks for it (the console's upload)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import Field

from saip.gateway.areas.knowledge import inputs
from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.errors import GatewayError
from saip.gateway.rest import Envelope, Failure, area_router, status_of
from saip.gateway.surface.management import Caller, Input

logger = logging.getLogger(__name__)

PERSON = Caller(client_name="rest-api")
NDJSON = "application/x-ndjson"
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

    @api.post(
        "/documents",
        summary=(
            "Ingest one document by absolute path, public URL, text or a file sent with it (upload); with Accept: "
            "application/x-ndjson, a line of its progress at each step, then a last line with its status and answer"
        ),
        response_model=Envelope,
        responses={200: {"content": {NDJSON: {"schema": {"type": "object"}}}}},
    )
    async def ingest(body: inputs.DocumentInput, request: Request) -> Response | Envelope:
        if NDJSON in request.headers.get("accept", ""):
            return StreamingResponse(_progressed(area, body), media_type=NDJSON)
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


async def _progressed(area: KnowledgeArea, body: inputs.DocumentInput) -> AsyncIterator[bytes]:
    """The ingest's progress as lines (`{"progress": {done, total, message}}`), then its end (`{"status", "envelope"}`,
    the envelope the route would have answered, under the status it would have had). A reader that leaves stops it."""
    lines: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def progress(done: float, total: float, message: str) -> None:
        await lines.put({"progress": {"done": done, "total": total, "message": message}})

    async def ingest() -> None:
        try:
            result = Envelope.of(await area.ingest_document(body, replace(PERSON, progress=progress)))
            await lines.put({"status": 200, "envelope": result.model_dump()})
        except GatewayError as exc:
            await lines.put({"status": status_of(exc), "envelope": Failure(message=str(exc)).model_dump()})
        except Exception:
            logger.exception("an ingest failed unexpectedly")
            failed = Failure(message="Unexpected error while ingesting; the gateway's log says why. Nothing was kept.")
            await lines.put({"status": 500, "envelope": failed.model_dump()})

    running = asyncio.create_task(ingest())
    try:
        while True:
            line = await lines.get()
            yield (json.dumps(line, ensure_ascii=False) + "\n").encode()
            if "status" in line:
                return
    finally:
        running.cancel()  # a reader that left: the service cancels the ingest and keeps nothing
