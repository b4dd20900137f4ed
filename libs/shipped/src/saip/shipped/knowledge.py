"""The knowledge tools of a bundle: each one's snapshot unpacked into the server's work folder and opened with Qdrant
Edge in-process (`saip.knowledge.edge`), searched with the knowledge service's own code: the same query vector, the
same relevance, threshold and order rules (`saip.knowledge.search`), the same answer shape.

A snapshot taken from a collection with the dense encoder also holds dense vectors; the shipped server carries no
model, so it ranks lexically (BM25), as the knowledge service does without the encoder.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from saip.knowledge import sparse
from saip.knowledge.config import MAX_TOP_K
from saip.knowledge.edge import EdgeIndex
from saip.knowledge.published import TOOL_INPUT_SCHEMA
from saip.knowledge.search import MAX_QUERY, chosen, hit_json, relative
from saip.shipped.answers import Answer
from saip.v1 import knowledge_pb2


class KnowledgeTool:
    def __init__(self, part: Mapping[str, Any], index: EdgeIndex) -> None:
        self.name = str(part["name"])
        self._description = str(part["description"])
        self._pipeline = dict(part["pipeline"])
        self._documents = {
            str(d["ingestId"]): knowledge_pb2.Document(
                ingest_id=str(d["ingestId"]), name=str(d["name"]), source=str(d["source"]), sha256=str(d["sha256"])
            )
            for d in part["documents"]
        }
        self._index = index

    @classmethod
    async def open(cls, part: Mapping[str, Any], snapshot: Path, work: Path) -> KnowledgeTool:
        """Unpack the part's snapshot (the gzip of an Edge shard snapshot) under `work` and open it read-only."""
        raw = work / f"{part['name']}.snapshot"
        await anyio.to_thread.run_sync(_decompress, snapshot, raw)
        index, _ = await EdgeIndex.from_snapshot(raw, work / f"knowledge-{part['name']}")
        await anyio.to_thread.run_sync(raw.unlink)
        return cls(part, index)

    async def close(self) -> None:
        await self._index.close()

    def listed(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=f"Search {self._pipeline['name']}",
            description=self._description,
            input_schema=TOOL_INPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
            ),
        )

    async def call(self, arguments: dict[str, Any]) -> Answer:
        problem = self._problem(arguments)
        if problem:
            return Answer(problem, None, is_error=True)
        query = str(arguments["query"]).strip()
        limit = int(arguments.get("topK") or self._pipeline["topK"])
        vector = sparse.encode_query(query)
        if not vector:
            return Answer(
                "the query has no searchable words (only stop words, punctuation or single letters); use the words "
                "the documents would contain",
                None,
                is_error=True,
            )
        ranked = await self._index.search(vector, list(self._documents), limit)
        found = chosen(
            ranked,
            relative(ranked),
            self._documents,
            float(self._pipeline["threshold"]),
            rerank=bool(self._pipeline["rerank"]),
        )
        result = {
            "tool": self.name,
            "query": query,
            "results": [hit_json(hit, document, relevance) for hit, document, relevance in found],
        }
        return Answer(json.dumps(result, ensure_ascii=False), result)

    def _problem(self, arguments: dict[str, Any]) -> str | None:
        unknown = sorted(set(arguments) - {"query", "topK"})
        if unknown:
            return f"unknown argument(s) {unknown}; '{self.name}' takes `query` and optionally `topK`"
        query, top_k = arguments.get("query"), arguments.get("topK")
        if not isinstance(query, str) or not query.strip():
            return f"'{self.name}' needs `query`, a string: the question or keywords to search for"
        if len(query) > MAX_QUERY:
            return f"the query is {len(query)} characters; use at most {MAX_QUERY}"
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K):
            return f"`topK` must be an integer between 1 and {MAX_TOP_K}"
        return None


def _decompress(snapshot: Path, raw: Path) -> None:
    with gzip.open(snapshot, "rb") as source, raw.open("wb") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
