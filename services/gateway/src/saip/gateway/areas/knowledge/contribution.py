"""The knowledge area: saip_knowledge_* tools over the knowledge service, the guide saip://guide/knowledge and the
prompt saip_knowledge_server. The REST API (/api/v1/knowledge) and `saip knowledge` call the same methods."""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.resources import files

import mcp_types as types

from saip.common.words import plural
from saip.gateway.areas.knowledge import views
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.areas.knowledge.inputs import (
    IngestInput,
    NamedInput,
    PipelineInput,
    PublishInput,
    SearchInput,
    SuggestInput,
    scope_words,
)
from saip.gateway.errors import ReservedName, ServiceRefused, refuse_reserved
from saip.gateway.surface.declare import Declared, asking, prompt, resource, tool
from saip.gateway.surface.expected import NOTHING, Expected, Read
from saip.gateway.surface.management import Approval, Caller, Level, ManagementResult
from saip.v1 import knowledge_pb2 as pb

logger = logging.getLogger(__name__)

GUIDE_URI = "saip://guide/knowledge"
GUIDE = files("saip.gateway.areas.knowledge").joinpath("guide.md").read_text(encoding="utf-8")


def destructive(summary: str, read: Read, refused: str = "") -> Approval:
    """A destructive step's approval over what its plan read of the knowledge service (bound by its fingerprint), and
    why the service would refuse it now."""
    return Approval(Level.DESTRUCTIVE, summary, expected=Expected.of(read), refused=refused)


class KnowledgeArea(Declared):
    category = "knowledge"

    def __init__(self, client: KnowledgeClient, served_names: Callable[[], set[str]]) -> None:
        self.client = client
        # The tool names /mcp serves from other sources (the knowledge service checks its own names).
        self._served_names = served_names

    @tool(Level.READ, "Knowledge status", idempotent=True)
    async def status(self) -> ManagementResult:
        """Counts of documents, chunks, pipelines and published knowledge tools; the ingest roots a path must be
        inside; the largest document accepted; the vector store. Read saip://guide/knowledge first."""
        reply = await self.client.status()
        data = {
            "documents": reply.documents,
            "chunks": reply.chunks,
            "pipelines": reply.pipelines,
            "tools": [views.tool(found) for found in reply.tools],
            "ingestRoots": list(reply.ingest_roots),
            "maxDocumentBytes": reply.max_document_bytes,
            "vectorStore": reply.vector_store,
            "encoder": reply.encoder,
        }
        message = (
            f"{plural(reply.documents, 'document')} in {plural(reply.chunks, 'chunk')}, "
            f"{plural(reply.pipelines, 'pipeline')}, {plural(len(reply.tools), 'published knowledge tool')}. "
            f"Ingest roots: {', '.join(reply.ingest_roots)}."
        )
        return ManagementResult(True, message, data=data)

    @tool(Level.READ, "List documents", idempotent=True)
    async def list_documents(self) -> ManagementResult:
        """The ingested documents: name, source, type, chunks, title, keywords, and managedBy when configuration
        declares the document (then it is read-only here)."""
        documents = [views.document(found) for found in (await self.client.documents()).documents]
        return ManagementResult(True, f"{plural(len(documents), 'document')}.", data={"documents": documents})

    @tool(Level.READ, "List pipelines", idempotent=True)
    async def list_pipelines(self) -> ManagementResult:
        """The pipelines: scope (documents; empty is every document), topK, similarity threshold, rerank."""
        pipelines = [views.pipeline(found) for found in (await self.client.pipelines()).pipelines]
        return ManagementResult(True, f"{plural(len(pipelines), 'pipeline')}.", data={"pipelines": pipelines})

    @tool(Level.READ, "Search knowledge", idempotent=True)
    async def search(self, arguments: SearchInput) -> ManagementResult:
        """Search the documents of a pipeline (every document when `pipeline` is omitted) and get the passages with
        their document, position, score and relevance. Run it before publishing a knowledge tool."""
        reply = await self.client.search(arguments.request())
        hits = [views.hit(found) for found in reply.hits]
        pipeline = reply.pipeline.name or "every document (default settings)"
        message = f"{plural(len(hits), 'passage')} from {pipeline}"
        if reply.dropped_below_threshold:
            message += f"; {reply.dropped_below_threshold} below the threshold {reply.pipeline.threshold:g} left out"
        if not hits:
            message += "; try other words, the ones the documents would use"
        return ManagementResult(True, message + ".", data={"pipeline": pipeline, "results": hits})

    @tool(Level.READ, "Suggest knowledge tools", idempotent=True)
    async def suggest_tools(self, arguments: SuggestInput) -> ManagementResult:
        """Proposes a search tool per pipeline: a name and a description written from its documents, ready for
        saip_knowledge_publish_tool (improve the description first)."""
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
            f"{plural(len(suggestions), 'suggestion')}; publish one with saip_knowledge_publish_tool."
            if suggestions
            else "No suggestion: ingest a document first (saip_knowledge_ingest_document)."
        )
        return ManagementResult(True, message, data={"suggestions": suggestions})

    @tool(Level.WRITE, "Ingest a document", summary=IngestInput.described)
    async def ingest_document(self, arguments: IngestInput, caller: Caller) -> ManagementResult:
        """Ingest one document by absolute `path` inside an ingest root, by public http(s) `url`, or by `text`: read
        it (text, markdown, HTML, JSON, PDF), cut it into chunks, index them. A refused or failed ingest leaves nothing
        behind. The first document creates the pipeline 'All documents (simple)'."""
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
        message = f"Ingested '{document.name}': {plural(document.chunks, 'chunk')}."
        if created:
            message += " Created the pipeline 'All documents (simple)'."
        return ManagementResult(
            True, message, persisted=True, data={"document": views.document(document), "createdPipeline": created}
        )

    @tool(Level.WRITE, "Create or update a pipeline", summary=PipelineInput.described, idempotent=True)
    async def apply_pipeline(self, arguments: PipelineInput) -> ManagementResult:
        """Create a pipeline, or update the one with this name (settings left out keep their value): the documents
        in scope (empty: every document), topK, similarity threshold, rerank."""
        reply = await self.client.apply_pipeline(arguments.request())
        verb = "Created" if reply.created else "Updated"
        return ManagementResult(
            True, f"{verb} the pipeline '{reply.pipeline.name}'.", persisted=True, data=views.pipeline(reply.pipeline)
        )

    async def plan_delete_document(self, arguments: NamedInput) -> Approval:
        found = await self.client.document(arguments.name)
        read = Read(arguments.name, f"the document '{found.name}'", found.fingerprint)
        chunks = "its one chunk" if found.chunks == 1 else f"all its {plural(found.chunks, 'chunk')}"
        return destructive(f"delete {read.what} and {chunks}", read, refused=found.delete_refused)

    @tool(Level.DESTRUCTIVE, "Delete a document", planner=plan_delete_document)
    async def delete_document(self, arguments: NamedInput, expected: Expected = NOTHING) -> ManagementResult:
        """Delete a document, its chunks and its stored original. Refused while a pipeline's scope names it, and for
        documents declared in configuration."""
        reply = await self.client.delete_document(arguments.name, expected.revision(arguments.name, ""))
        return ManagementResult(
            True,
            f"Deleted '{reply.document.name}' and its {plural(reply.chunks_deleted, 'chunk')}.",
            persisted=True,
            data={"document": views.document(reply.document), "chunksDeleted": reply.chunks_deleted},
        )

    async def plan_delete_pipeline(self, arguments: NamedInput) -> Approval:
        found = await self.client.pipeline(arguments.name)
        read = Read(arguments.name, f"the pipeline '{found.name}'", found.fingerprint)
        summary = f"delete {read.what}, searching {scope_words(found)} (the documents stay)"
        return destructive(summary, read, refused=found.delete_refused)

    @tool(Level.DESTRUCTIVE, "Delete a pipeline", planner=plan_delete_pipeline)
    async def delete_pipeline(self, arguments: NamedInput, expected: Expected = NOTHING) -> ManagementResult:
        """Delete a pipeline (the documents stay). Refused while a published knowledge tool searches it, and for
        pipelines declared in configuration."""
        reply = await self.client.delete_pipeline(arguments.name, expected.revision(arguments.name, ""))
        return ManagementResult(
            True, f"Deleted the pipeline '{reply.pipeline.name}'.", persisted=True, data=views.pipeline(reply.pipeline)
        )

    async def plan_publish(self, arguments: PublishInput) -> Approval:
        """The question names the documents the tool will serve: the pipeline's scope as the service reads it now,
        bound by its fingerprint (a document ingested into an every-document scope changes it too)."""
        self._name_free(arguments.name)  # refused before the person is asked
        found = await self.client.pipeline(arguments.pipeline)
        return destructive(
            arguments.described(found), Read(arguments.pipeline, f"the pipeline '{found.name}'", found.fingerprint)
        )

    @tool(Level.DESTRUCTIVE, "Publish a knowledge tool", planner=plan_publish)
    async def publish_tool(self, arguments: PublishInput, expected: Expected = NOTHING) -> ManagementResult:
        """Publish a search tool over a pipeline on this MCP server: it takes `query` (and `topK`) and returns the
        matching passages with their sources; its calls are audited. The name must not start with 'saip_' nor be
        served already."""
        self._name_free(arguments.name)
        reply = await self.client.publish_tool(arguments.request(expected.revision(arguments.pipeline, "")))
        return ManagementResult(
            True,
            f"Published '{reply.tool.name}', searching '{reply.tool.pipeline_name}'. It is served on /mcp now; "
            "call it with a `query`.",
            persisted=True,
            data=views.tool(reply.tool),
        )

    def _name_free(self, name: str) -> None:
        """A knowledge tool's name must not be the management tools' prefix nor a name served by another source."""
        try:
            refuse_reserved(name)
        except ReservedName as exc:
            raise ServiceRefused(f"{exc}; choose another tool name") from None
        if name in self._served_names():
            raise ServiceRefused(
                f"'{name}' is already served on /mcp by another tool; choose another name "
                "(tools/list shows the names in use)"
            )

    async def plan_unpublish(self, arguments: NamedInput) -> Approval:
        found = await self.client.tool(arguments.name)
        read = Read(arguments.name, f"the knowledge tool '{found.name}'", found.fingerprint)
        return destructive(f"unpublish {read.what} (searching '{found.pipeline_name}') from /mcp", read)

    @tool(Level.DESTRUCTIVE, "Unpublish a knowledge tool", planner=plan_unpublish)
    async def unpublish_tool(self, arguments: NamedInput, expected: Expected = NOTHING) -> ManagementResult:
        """Remove a published knowledge tool from this MCP server (its pipeline and documents stay)."""
        reply = await self.client.unpublish_tool(arguments.name, expected.revision(arguments.name, ""))
        return ManagementResult(
            True, f"Unpublished '{reply.tool.name}'; it is gone from /mcp.", persisted=True, data=views.tool(reply.tool)
        )

    async def published_tools(self) -> ManagementResult:
        """The published knowledge tools (the person's list; the AI reads them in saip_knowledge_status)."""
        found = (await self.status()).data["tools"]
        return ManagementResult(True, f"{plural(len(found), 'published knowledge tool')}.", data={"tools": found})

    @resource(GUIDE_URI, "Knowledge guide")
    async def guide(self) -> str:
        """How to build knowledge: ingest by path, URL or text; when a pipeline is needed; search before shipping;
        publish a knowledge tool. Read it before the saip_knowledge_* tools."""
        return GUIDE

    @prompt(
        "saip_knowledge_server",
        arguments=[
            types.PromptArgument(name="topic", description="What the knowledge tool should answer questions about."),
            types.PromptArgument(name="sources", description="The files, URLs or text to build it from."),
        ],
    )
    async def knowledge_server(self, arguments: dict[str, str]) -> types.GetPromptResult:
        """Build a knowledge server: ingest documents, search them, publish a knowledge tool."""
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
        return asking("Build and publish a knowledge tool", text)
