"""The documents and pipelines declared in configuration (`knowledge.documents`, `knowledge.pipelines`): brought in
at start, configuration winning over what the AI made, and read-only to the AI afterwards (each refusal names the
key). A changed source is ingested again; an entry removed from configuration is deleted."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Sequence

from saip.knowledge.config import DeclaredDocument, DeclaredPipeline
from saip.knowledge.errors import KnowledgeError
from saip.knowledge.items import slug
from saip.knowledge.knowledge import Knowledge, SourceKind
from saip.knowledge.pipelines import Pipelines

logger = logging.getLogger(__name__)

DOCUMENTS_KEY = "knowledge.documents"
PIPELINES_KEY = "knowledge.pipelines"


class Declared:
    def __init__(self, knowledge: Knowledge, pipelines: Pipelines) -> None:
        self._knowledge = knowledge
        self._pipelines = pipelines

    async def apply(self, documents: Sequence[DeclaredDocument], pipelines: Sequence[DeclaredPipeline]) -> list[str]:
        """Bring the declared documents and pipelines in: configuration wins. Returns the problems (also logged)."""
        problems: list[str] = []
        declared_docs = {slug(d.name) for d in documents}
        declared_pipes = {slug(p.name) for p in pipelines}
        for pipeline in self._knowledge.catalog.pipelines():
            if pipeline.managed_by == PIPELINES_KEY and pipeline.id not in declared_pipes:
                await self._attempt(problems, pipeline.name, self._pipelines.delete(pipeline.name, force=True))
        for document in self._knowledge.catalog.documents():
            if document.managed_by == DOCUMENTS_KEY and document.id not in declared_docs:
                await self._attempt(problems, document.name, self._knowledge.delete_document(document.name, force=True))
        for declared in documents:
            await self._attempt(problems, declared.name, self._declare_document(declared))
        for declared_pipeline in pipelines:
            await self._attempt(
                problems,
                declared_pipeline.name,
                self._pipelines.apply(
                    declared_pipeline.name,
                    declared_pipeline.documents,
                    top_k=declared_pipeline.top_k,
                    threshold=declared_pipeline.threshold,
                    rerank=declared_pipeline.rerank,
                    managed_by=PIPELINES_KEY,
                ),
            )
        return problems

    async def _declare_document(self, declared: DeclaredDocument) -> None:
        kind: SourceKind = "path" if declared.path is not None else "url" if declared.url is not None else "text"
        loaded = await self._knowledge.load(kind, declared.path or declared.url or declared.text or "")
        existing = self._knowledge.catalog.document(slug(declared.name))
        if existing is not None:
            same = existing.sha256 == hashlib.sha256(loaded.data).hexdigest()
            if same and existing.managed_by == DOCUMENTS_KEY:
                return
            await self._knowledge.delete_document(existing.name, force=True)
        await self._knowledge.ingest_loaded(loaded, declared.name, managed_by=DOCUMENTS_KEY)

    @staticmethod
    async def _attempt(problems: list[str], name: str, step: Awaitable[object]) -> None:
        try:
            await step
        except KnowledgeError as exc:
            problems.append(f"{name}: {exc}")
            logger.error("configured knowledge item not applied", extra={"item": name, "error": str(exc)})
