"""The knowledge area: saip_knowledge_* tools over the knowledge service, the guide saip://guide/knowledge and the
prompt saip_knowledge_server. The REST API (/api/v1/knowledge) calls the same methods."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from importlib.resources import files
from typing import Any

import mcp_types as types
from google.protobuf.timestamp_pb2 import Timestamp
from pydantic import Field, model_validator

from saip.gateway.errors import ReservedName, ServiceRefused, refuse_reserved
from saip.gateway.knowledge_client import KnowledgeClient
from saip.gateway.management import (
    Caller,
    Input,
    Level,
    ManagementPrompt,
    ManagementResource,
    ManagementResourceTemplate,
    ManagementResult,
    ManagementTool,
    NoInput,
)
from saip.gateway.published import SOURCE_PREFIX
from saip.gateway.registry import Registry
from saip.v1 import knowledge_pb2 as pb

logger = logging.getLogger(__name__)

GUIDE_URI = "saip://guide/knowledge"
GUIDE = files("saip.gateway").joinpath("guides/knowledge.md").read_text(encoding="utf-8")
# Larger documents go by path or URL: a gRPC message is at most 4 MiB, and a character up to 4 bytes.
MAX_TEXT = 1_000_000


class IngestInput(Input):
    path: str | None = Field(
        default=None,
        max_length=4096,
        description="Absolute path of a file inside an ingest root (saip_knowledge_status lists the roots).",
    )
    url: str | None = Field(default=None, max_length=4096, description="An http(s) URL on a public address.")
    text: str | None = Field(
        default=None, max_length=MAX_TEXT, description="The text itself (up to 1,000,000 characters), read as markdown."
    )
    name: str | None = Field(
        default=None,
        max_length=200,
        description="A unique name for the document; the file or URL name (or text-<hash>) when omitted.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> IngestInput:
        given = [key for key in ("path", "url", "text") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of path, url or text (got {', '.join(given) or 'none'})")
        return self

    def request(self) -> pb.IngestDocumentRequest:
        request = pb.IngestDocumentRequest(name=self.name or "")
        if self.path is not None:
            request.path = self.path
        elif self.url is not None:
            request.url = self.url
        else:
            request.text = self.text or ""
        return request

    def described(self) -> str:
        if self.path is not None:
            what = f"the file {self.path}"
        elif self.url is not None:
            what = f"the page {self.url}"
        else:
            what = f"{len(self.text or '')} characters of text"
        return f"ingest {what}" + (f" as '{self.name}'" if self.name else "")


class NamedInput(Input):
    name: str = Field(min_length=1, max_length=200, description="The exact name, as the list shows it.")


class PipelineInput(Input):
    name: str = Field(min_length=1, max_length=200, description="The pipeline's name; an existing one is updated.")
    documents: list[str] = Field(
        default_factory=list, max_length=500, description="Document names in scope; empty means every document."
    )
    topK: int | None = Field(default=None, ge=1, le=50, description="Passages returned (default 5).")
    threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Minimum relevance, 0 to 1 (default 0.35)."
    )
    rerank: bool | None = Field(default=None, description="True: best passages first (default); false: reading order.")

    def request(self) -> pb.ApplyPipelineRequest:
        request = pb.ApplyPipelineRequest(name=self.name, documents=self.documents)
        if self.topK is not None:
            request.top_k = self.topK
        if self.threshold is not None:
            request.threshold = self.threshold
        if self.rerank is not None:
            request.rerank = self.rerank
        return request


class SearchInput(Input):
    query: str = Field(min_length=1, max_length=2000, description="The question or keywords.")
    pipeline: str | None = Field(
        default=None, max_length=200, description="A pipeline's name; every document with the defaults when omitted."
    )
    topK: int | None = Field(default=None, ge=1, le=50, description="Passages returned (the pipeline's when omitted).")

    def request(self) -> pb.SearchRequest:
        request = pb.SearchRequest(query=self.query, pipeline=self.pipeline or "")
        if self.topK is not None:
            request.top_k = self.topK
        return request


class SuggestInput(Input):
    pipeline: str | None = Field(default=None, max_length=200, description="One pipeline; every pipeline when omitted.")


class PublishInput(Input):
    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z][A-Za-z0-9_-]*$",
        description="The tool's name on /mcp: letters, digits, '_' or '-'; not starting with 'saip_'.",
    )
    description: str = Field(
        min_length=1, max_length=1024, description="When an AI should use the tool; suggest_tools drafts one."
    )
    pipeline: str = Field(min_length=1, max_length=200, description="The pipeline the tool searches.")


def _time(stamp: Timestamp) -> str | None:
    return stamp.ToJsonString() if stamp.seconds or stamp.nanos else None


def document_view(document: pb.Document) -> dict[str, Any]:
    return {
        "name": document.name,
        "id": document.id,
        "title": document.title or None,
        "sourceKind": document.source_kind,
        "source": document.source,
        "mediaType": document.media_type,
        "sizeBytes": document.size_bytes,
        "chunks": document.chunks,
        "pages": document.pages or None,
        "keywords": list(document.keywords),
        "createdAt": _time(document.created_at),
        "managedBy": document.managed_by or None,
    }


def pipeline_view(pipeline: pb.Pipeline) -> dict[str, Any]:
    return {
        "name": pipeline.name,
        "documents": list(pipeline.document_names),
        "scope": "selected documents" if pipeline.document_ids else "every document",
        "topK": pipeline.top_k,
        "threshold": round(pipeline.threshold, 4),
        "rerank": pipeline.rerank,
        "managedBy": pipeline.managed_by or None,
        "updatedAt": _time(pipeline.updated_at),
    }


def tool_view(tool: pb.KnowledgeTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "pipeline": tool.pipeline_name,
        "publishedAt": _time(tool.published_at),
    }


def hit_view(hit: pb.SearchHit) -> dict[str, Any]:
    return {
        "document": hit.document_name,
        "source": hit.source,
        "position": hit.position,
        "page": hit.page or None,
        "score": round(hit.score, 4),
        "relevance": round(hit.relevance, 4),
        "text": hit.text,
    }


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class KnowledgeContribution:
    category = "knowledge"

    def __init__(self, client: KnowledgeClient, served_names: Callable[[], set[str]]) -> None:
        self.client = client
        self._served_names = served_names

    def tools(self) -> Sequence[ManagementTool]:
        def tool(name: str, title: str, description: str, model: type[Input], level: Level, **more: Any) -> Any:
            return ManagementTool(
                name=f"saip_knowledge_{name}",
                category=self.category,
                title=title,
                description=description,
                input_model=model,
                level=level,
                **more,
            )

        return [
            tool(
                "status",
                "Knowledge status",
                "Counts of documents, chunks, pipelines and published knowledge tools; the ingest roots a path must "
                "be inside; the largest document accepted; the vector store. Read saip://guide/knowledge first.",
                NoInput,
                Level.READ,
                handler=lambda _, caller: self.status(),
                idempotent=True,
            ),
            tool(
                "list_documents",
                "List documents",
                "The ingested documents: name, source, type, chunks, title, keywords, and managedBy when configuration "
                "declares the document (then it is read-only here).",
                NoInput,
                Level.READ,
                handler=lambda _, caller: self.documents(),
                idempotent=True,
            ),
            tool(
                "list_pipelines",
                "List pipelines",
                "The pipelines: scope (documents; empty is every document), topK, similarity threshold, rerank.",
                NoInput,
                Level.READ,
                handler=lambda _, caller: self.pipelines(),
                idempotent=True,
            ),
            tool(
                "search",
                "Search knowledge",
                "Search the documents of a pipeline (every document when `pipeline` is omitted) and get the passages "
                "with their document, position, score and relevance. Run it before publishing a knowledge tool.",
                SearchInput,
                Level.READ,
                handler=lambda arguments, caller: self.search(arguments),
                idempotent=True,
            ),
            tool(
                "suggest_tools",
                "Suggest knowledge tools",
                "Proposes a search tool per pipeline: a name and a description written from its documents, ready for "
                "saip_knowledge_publish_tool (improve the description first).",
                SuggestInput,
                Level.READ,
                handler=lambda arguments, caller: self.suggest(arguments),
                idempotent=True,
            ),
            tool(
                "ingest_document",
                "Ingest a document",
                "Ingest one document by absolute `path` inside an ingest root, by public http(s) `url`, or by `text`: "
                "read it (text, markdown, HTML, JSON, PDF), cut it into chunks, index them. A refused or failed "
                "ingest leaves nothing behind. The first document creates the pipeline 'All documents (simple)'.",
                IngestInput,
                Level.WRITE,
                handler=self.ingest,
                summary=lambda arguments: arguments.described(),
            ),
            tool(
                "apply_pipeline",
                "Create or update a pipeline",
                "Create a pipeline, or update the one with this name (settings left out keep their value): the "
                "documents in scope (empty: every document), topK, similarity threshold, rerank.",
                PipelineInput,
                Level.WRITE,
                handler=lambda arguments, caller: self.apply_pipeline(arguments),
                summary=lambda arguments: (
                    f"apply the pipeline '{arguments.name}' over "
                    + (", ".join(arguments.documents) if arguments.documents else "every document")
                ),
                idempotent=True,
            ),
            tool(
                "delete_document",
                "Delete a document",
                "Delete a document, its chunks and its stored original. Refused while a pipeline's scope names it, "
                "and for documents declared in configuration.",
                NamedInput,
                Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.delete_document(arguments.name),
                summary=lambda arguments: f"delete the document '{arguments.name}' and all its chunks",
            ),
            tool(
                "delete_pipeline",
                "Delete a pipeline",
                "Delete a pipeline (the documents stay). Refused while a published knowledge tool searches it, and "
                "for pipelines declared in configuration.",
                NamedInput,
                Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.delete_pipeline(arguments.name),
                summary=lambda arguments: f"delete the pipeline '{arguments.name}'",
            ),
            tool(
                "publish_tool",
                "Publish a knowledge tool",
                "Publish a search tool over a pipeline on this MCP server: it takes `query` (and `topK`) and returns "
                "the matching passages with their sources; its calls are audited. The name must not start with "
                "'saip_' nor be served already.",
                PublishInput,
                Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.publish_tool(arguments),
                summary=lambda arguments: (
                    f"publish the knowledge tool '{arguments.name}' on /mcp, searching the pipeline "
                    f"'{arguments.pipeline}': {arguments.description[:200]}"
                ),
            ),
            tool(
                "unpublish_tool",
                "Unpublish a knowledge tool",
                "Remove a published knowledge tool from this MCP server (its pipeline and documents stay).",
                NamedInput,
                Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.unpublish_tool(arguments.name),
                summary=lambda arguments: f"unpublish the knowledge tool '{arguments.name}' from /mcp",
            ),
        ]

    def resources(self) -> Sequence[ManagementResource]:
        return [
            ManagementResource(
                uri=GUIDE_URI,
                name="Knowledge guide",
                description=(
                    "How to build knowledge: ingest by path, URL or text; when a pipeline is needed; search before "
                    "shipping; publish a knowledge tool. Read it before the saip_knowledge_* tools."
                ),
                read=self._guide,
                mime_type="text/markdown",
            )
        ]

    def resource_templates(self) -> Sequence[ManagementResourceTemplate]:
        return []

    def prompts(self) -> Sequence[ManagementPrompt]:
        return [
            ManagementPrompt(
                name="saip_knowledge_server",
                description="Build a knowledge server: ingest documents, search them, publish a knowledge tool.",
                render=self._prompt,
                arguments=[
                    types.PromptArgument(
                        name="topic", description="What the knowledge tool should answer questions about."
                    ),
                    types.PromptArgument(name="sources", description="The files, URLs or text to build it from."),
                ],
            )
        ]

    async def _guide(self) -> str:
        return GUIDE

    async def _prompt(self, arguments: dict[str, str]) -> types.GetPromptResult:
        topic = arguments.get("topic", "").strip() or "the documents the user gives you"
        sources = arguments.get("sources", "").strip()
        text = (
            f"Build a knowledge tool that answers questions about {topic}.\n\n"
            f"First read the resource {GUIDE_URI}: it explains ingest by path, URL or text, when a pipeline is "
            "needed, and why to search before publishing. Then:\n"
            "1. Call saip_knowledge_status to learn the ingest roots, and saip_knowledge_list_documents.\n"
            "2. Ingest each source with saip_knowledge_ingest_document (absolute paths inside an ingest root).\n"
            "3. Create a pipeline with saip_knowledge_apply_pipeline if the tool should search only some documents.\n"
            "4. Search with saip_knowledge_search using questions a user would ask; fix gaps before going on.\n"
            "5. Call saip_knowledge_suggest_tools, improve the description, and publish with "
            "saip_knowledge_publish_tool (the person approves it at this client).\n"
            "6. Call the new tool once and report what it returned."
        )
        if sources:
            text += f"\n\nSources to ingest: {sources}"
        return types.GetPromptResult(
            description="Build and publish a knowledge tool",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    # The methods the tools and the REST API share ---------------------------------------------------------------

    async def status(self) -> ManagementResult:
        reply = await self.client.status()
        data = {
            "documents": reply.documents,
            "chunks": reply.chunks,
            "pipelines": reply.pipelines,
            "tools": [tool_view(tool) for tool in reply.tools],
            "ingestRoots": list(reply.ingest_roots),
            "maxDocumentBytes": reply.max_document_bytes,
            "vectorStore": reply.vector_store,
            "encoder": reply.encoder,
        }
        message = (
            f"{_plural(reply.documents, 'document')} in {_plural(reply.chunks, 'chunk')}, "
            f"{_plural(reply.pipelines, 'pipeline')}, {_plural(len(reply.tools), 'published knowledge tool')}. "
            f"Ingest roots: {', '.join(reply.ingest_roots)}."
        )
        return ManagementResult(True, message, data=data)

    async def documents(self) -> ManagementResult:
        documents = [document_view(d) for d in (await self.client.documents()).documents]
        return ManagementResult(True, f"{_plural(len(documents), 'document')}.", data={"documents": documents})

    async def pipelines(self) -> ManagementResult:
        pipelines = [pipeline_view(p) for p in (await self.client.pipelines()).pipelines]
        return ManagementResult(True, f"{_plural(len(pipelines), 'pipeline')}.", data={"pipelines": pipelines})

    async def search(self, arguments: SearchInput) -> ManagementResult:
        reply = await self.client.search(arguments.request())
        hits = [hit_view(hit) for hit in reply.hits]
        pipeline = reply.pipeline.name or "every document (default settings)"
        message = f"{_plural(len(hits), 'passage')} from {pipeline}"
        if reply.dropped_below_threshold:
            message += f"; {reply.dropped_below_threshold} below the threshold {reply.pipeline.threshold:g} left out"
        if not hits:
            message += "; try other words, the ones the documents would use"
        return ManagementResult(True, message + ".", data={"pipeline": pipeline, "results": hits})

    async def suggest(self, arguments: SuggestInput) -> ManagementResult:
        reply = await self.client.suggest_tools(arguments.pipeline or "")
        suggestions = [
            {
                "name": found.name,
                "description": found.description,
                "pipeline": found.pipeline,
                "documents": list(found.documents),
                "publishedAs": found.published_as or None,
            }
            for found in reply.suggestions
        ]
        message = (
            f"{_plural(len(suggestions), 'suggestion')}; publish one with saip_knowledge_publish_tool."
            if suggestions
            else "No suggestion: ingest a document first (saip_knowledge_ingest_document)."
        )
        return ManagementResult(True, message, data={"suggestions": suggestions})

    async def ingest(self, arguments: IngestInput, caller: Caller) -> ManagementResult:
        document: pb.Document | None = None
        created = False
        async for event in self.client.ingest(arguments.request()):
            if event.HasField("progress"):
                if caller.progress is not None:
                    step = event.progress
                    try:
                        await caller.progress(step.done, step.total, step.message)
                    except Exception as exc:  # progress is advisory; the ingest goes on without it
                        logger.debug("ingest progress not delivered", extra={"error": str(exc)})
            else:
                document, created = event.done.document, event.done.created_default_pipeline
        if document is None:
            raise ServiceRefused("The knowledge service ended the ingest without a result; list the documents.")
        message = f"Ingested '{document.name}': {_plural(document.chunks, 'chunk')}."
        if created:
            message += " Created the pipeline 'All documents (simple)'."
        return ManagementResult(
            True, message, persisted=True, data={"document": document_view(document), "createdPipeline": created}
        )

    async def apply_pipeline(self, arguments: PipelineInput) -> ManagementResult:
        reply = await self.client.apply_pipeline(arguments.request())
        verb = "Created" if reply.created else "Updated"
        return ManagementResult(
            True, f"{verb} the pipeline '{reply.pipeline.name}'.", persisted=True, data=pipeline_view(reply.pipeline)
        )

    async def delete_document(self, name: str) -> ManagementResult:
        reply = await self.client.delete_document(name)
        return ManagementResult(
            True,
            f"Deleted '{reply.document.name}' and its {_plural(reply.chunks_deleted, 'chunk')}.",
            persisted=True,
            data={"document": document_view(reply.document), "chunksDeleted": reply.chunks_deleted},
        )

    async def delete_pipeline(self, name: str) -> ManagementResult:
        reply = await self.client.delete_pipeline(name)
        return ManagementResult(
            True, f"Deleted the pipeline '{reply.pipeline.name}'.", persisted=True, data=pipeline_view(reply.pipeline)
        )

    async def publish_tool(self, arguments: PublishInput) -> ManagementResult:
        try:
            refuse_reserved(arguments.name)
        except ReservedName as exc:
            raise ServiceRefused(f"{exc}; choose another tool name") from None
        if arguments.name in self._served_names():
            raise ServiceRefused(
                f"'{arguments.name}' is already served on /mcp by another tool; choose another name "
                "(tools/list shows the names in use)"
            )
        reply = await self.client.publish_tool(
            pb.PublishKnowledgeToolRequest(
                name=arguments.name, description=arguments.description, pipeline=arguments.pipeline
            )
        )
        return ManagementResult(
            True,
            f"Published '{reply.tool.name}', searching '{reply.tool.pipeline_name}'. It is served on /mcp now; "
            "call it with a `query`.",
            persisted=True,
            data=tool_view(reply.tool),
        )

    async def unpublish_tool(self, name: str) -> ManagementResult:
        reply = await self.client.unpublish_tool(name)
        return ManagementResult(
            True, f"Unpublished '{reply.tool.name}'; it is gone from /mcp.", persisted=True, data=tool_view(reply.tool)
        )


def connect(address: str | None, stack: AsyncExitStack, registry: Registry) -> KnowledgeContribution | None:
    """The knowledge area when the knowledge service is configured (knowledge.addr); its client closes with the
    gateway. A knowledge tool may not take a name another source serves (the service checks its own names)."""
    if not address:
        return None
    client = KnowledgeClient(address)
    stack.push_async_callback(client.close)
    return KnowledgeContribution(client, lambda: registry.served_names(excluding=SOURCE_PREFIX + "knowledge"))
