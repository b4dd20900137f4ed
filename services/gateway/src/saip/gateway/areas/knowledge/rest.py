"""The person's side of the knowledge area under /api/v1/knowledge: the methods the saip_knowledge_* tools call, and
an ingest that streams its progress (NDJSON) when the request asks for it (the console's upload)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from saip.gateway.areas.knowledge import inputs
from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.errors import GatewayError
from saip.gateway.rest import Call, Envelope, Failure, area_router, status_of
from saip.gateway.surface.management import Caller

logger = logging.getLogger(__name__)

PERSON = Caller(client_name="rest-api")
NDJSON = "application/x-ndjson"


def router(area: KnowledgeArea) -> APIRouter:
    # Document and pipeline names are free text, so a slash in one is part of it (`{name:path}`): sent percent-encoded,
    # as the command line sends every name, it still arrives decoded.
    api = area_router(
        "/knowledge",
        {
            "GET /status": Call(area.status, "Documents, chunks, pipelines, published tools, ingest roots"),
            "GET /documents": Call(area.list_documents, "The ingested documents (data.documents)"),
            "GET /pipelines": Call(area.list_pipelines, "The pipelines (data.pipelines)"),
            "GET /tools": Call(area.published_tools, "The published knowledge tools (data.tools)"),
            "DELETE /documents/{name:path}": Call(
                area.delete_document, "Delete a document, its chunks and its original"
            ),
            "PUT /pipelines/{name:path}": Call(area.apply_pipeline, "Create or update a pipeline"),
            "DELETE /pipelines/{name:path}": Call(area.delete_pipeline, "Delete a pipeline (its documents stay)"),
            "POST /search": Call(area.search, "Search a pipeline's documents"),
            "GET /suggestions": Call(area.suggest_tools, "Knowledge tools proposed from each pipeline's documents"),
            "POST /tools": Call(area.publish_tool, "Publish a knowledge tool on /mcp"),
            "DELETE /tools/{name}": Call(area.unpublish_tool, "Unpublish a knowledge tool"),
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
