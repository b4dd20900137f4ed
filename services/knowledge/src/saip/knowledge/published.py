"""The knowledge tools: a pipeline's search published under a tool name, served on /mcp (read-only, idempotent),
with suggestions of a name and a description written from the pipeline's documents."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from saip.common.timestamps import now
from saip.common.words import is_reserved
from saip.knowledge import suggest
from saip.knowledge.config import MAX_TOP_K
from saip.knowledge.errors import AlreadyExists, InvalidRequest, NotFound, Refused
from saip.knowledge.items import expect, fingerprint, listed
from saip.knowledge.pipelines import Pipelines
from saip.knowledge.ports import Index
from saip.knowledge.search import Search, hit_json
from saip.v1 import common_pb2, knowledge_pb2

logger = logging.getLogger(__name__)

SOURCE = "knowledge"
MAX_DESCRIPTION = 1024
RESERVED = (
    "'{name}' starts with 'saip_', which is reserved for this app's own management tools; choose another tool name"
)


class KnowledgeTools:
    def __init__(self, pipelines: Pipelines, search: Search, index: Index) -> None:
        self._catalog = pipelines.catalog
        self._pipelines = pipelines
        self._search = search
        self._index = index

    def suggest(self, pipeline_name: str = "") -> list[suggest.Suggestion]:
        pipelines = [self._pipelines.named(pipeline_name)] if pipeline_name.strip() else self._catalog.pipelines()
        taken = {tool.name for tool in self._catalog.tools()}
        suggestions = []
        for pipeline in sorted(pipelines, key=lambda p: p.name.casefold()):
            try:
                documents = self._pipelines.scope(pipeline)
            except Refused:
                if pipeline_name.strip():
                    raise
                continue  # a pipeline with a dangling scope is reported when it is searched, not suggested
            if not documents:
                continue
            found = suggest.suggest(pipeline, documents, self._catalog.tools(), taken)
            taken.add(found.name)
            suggestions.append(found)
        return suggestions

    def every(self) -> list[knowledge_pb2.KnowledgeTool]:
        shown = []
        for tool in sorted(self._catalog.tools(), key=lambda t: t.name):
            copy = knowledge_pb2.KnowledgeTool()
            copy.CopyFrom(tool)
            copy.fingerprint = fingerprint(tool)
            pipeline = self._catalog.pipeline(tool.pipeline_id)
            copy.pipeline_name = pipeline.name if pipeline else tool.pipeline_id
            shown.append(copy)
        return shown

    def named(self, name: str) -> knowledge_pb2.KnowledgeTool:
        """The published tool as replies show it (its pipeline's name, its fingerprint)."""
        found = next((tool for tool in self.every() if tool.name == name.strip()), None)
        if found is None:
            raise NotFound(
                f"no knowledge tool named '{name}'; the published ones are "
                f"{listed([t.name for t in self._catalog.tools()])}"
            )
        return found

    async def publish(
        self, name: str, description: str, pipeline_name: str, expected: str = ""
    ) -> knowledge_pb2.KnowledgeTool:
        """Publish a search of the pipeline; `expected` is the pipeline's fingerprint an approval described (its
        settings and the documents it serves), and any other state is refused before anything is published."""
        name, description = name.strip(), description.strip()
        if is_reserved(name):
            raise Refused(RESERVED.format(name=name))
        if not suggest.TOOL_NAME.match(name):
            raise InvalidRequest(
                f"'{name}' is not a valid tool name; use 1 to 64 letters, digits, '_' or '-', starting with a letter"
            )
        if not description or len(description) > MAX_DESCRIPTION:
            raise InvalidRequest(
                f"a knowledge tool needs a description of 1 to {MAX_DESCRIPTION} characters that tells an AI when "
                "to use it (saip_knowledge_suggest_tools writes one from the documents)"
            )
        pipeline = self._pipelines.named(pipeline_name)
        self._pipelines.scope(pipeline)  # refuses a pipeline over a deleted document
        now_print = self._pipelines.fingerprint(pipeline)
        expect(f"the pipeline '{pipeline.name}'", expected, now_print, "saip_knowledge_list_pipelines")
        existing = self._catalog.tool(name)
        if existing is not None:
            raise AlreadyExists(
                f"the knowledge tool '{name}' is already published; unpublish it first "
                "(saip_knowledge_unpublish_tool) or choose another name"
            )
        tool = knowledge_pb2.KnowledgeTool(
            name=name, description=description, pipeline_id=pipeline.id, published_at=now()
        )
        await self._catalog.create_tool(tool)
        tool.pipeline_name = pipeline.name
        logger.info("knowledge tool published", extra={"tool": name, "pipeline": pipeline.id})
        return tool

    async def unpublish(self, name: str, expected: str = "") -> knowledge_pb2.KnowledgeTool:
        """Unpublish the tool as an approval described it (`expected`, its fingerprint) or not at all."""
        tool = self.named(name)
        expect(f"the knowledge tool '{tool.name}'", expected, tool.fingerprint, "saip_knowledge_status")
        await self._catalog.delete_tool(tool.name)
        logger.info("knowledge tool unpublished", extra={"tool": tool.name})
        return tool

    def definition(self, name: str) -> knowledge_pb2.KnowledgeToolDefinition:
        """What a shipped copy of the tool carries besides its chunks: the tool, its pipeline, its documents."""
        tool = self._catalog.tool(name.strip())
        if tool is None:
            raise NotFound(
                f"no knowledge tool named '{name}'; the published ones are "
                f"{listed([t.name for t in self._catalog.tools()])}"
            )
        pipeline = self._catalog.pipeline(tool.pipeline_id)
        if pipeline is None:
            raise Refused(f"the pipeline behind '{tool.name}' is gone; ask the person to unpublish the tool")
        documents = self._pipelines.scope(pipeline)
        return knowledge_pb2.KnowledgeToolDefinition(
            tool=tool, pipeline=self._pipelines.shown(pipeline), documents=documents
        )

    async def snapshot(self, name: str, target: Path) -> knowledge_pb2.KnowledgeToolDefinition:
        """The tool's definition, and a Qdrant Edge snapshot of its documents' chunks written at `target`."""
        definition = self.definition(name)
        await self._index.snapshot([document.ingest_id for document in definition.documents], target)
        return definition

    def served(self) -> list[common_pb2.ServedTool]:
        return [
            common_pb2.ServedTool(
                name=tool.name,
                title=f"Search {tool.pipeline_name}",
                description=tool.description,
                input_schema_json=json.dumps(TOOL_INPUT_SCHEMA),
                read_only=True,
                idempotent=True,
                source=SOURCE,
            )
            for tool in self.every()
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call of a published knowledge tool: the search of its pipeline. Bad arguments raise InvalidRequest."""
        tool = self._catalog.tool(name)
        if tool is None:
            raise NotFound(f"no knowledge tool named '{name}' is published")
        unknown = sorted(set(arguments) - {"query", "topK"})
        if unknown:
            raise InvalidRequest(f"unknown argument(s) {unknown}; '{name}' takes `query` and optionally `topK`")
        query, top_k = arguments.get("query"), arguments.get("topK")
        if not isinstance(query, str):
            raise InvalidRequest(f"'{name}' needs `query`, a string: the question or keywords to search for")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
            raise InvalidRequest(f"`topK` must be an integer between 1 and {MAX_TOP_K}")
        pipeline = self._catalog.pipeline(tool.pipeline_id)
        if pipeline is None:
            raise Refused(f"the pipeline behind '{name}' is gone; ask the person to unpublish the tool")
        found = await self._search.search(pipeline.name, query, top_k)
        return {
            "tool": name,
            "query": query.strip(),
            "results": [hit_json(hit, document, relevance) for hit, document, relevance in found.hits],
        }


TOOL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "The question or keywords to search for."},
        "topK": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOP_K,
            "description": "How many passages at most (the pipeline's topK when omitted).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
