"""Pipelines: a search's scope (some documents, or all) and settings (top-k, threshold, rerank). The default
pipeline searches every document; one declared in configuration is changed only there."""

from __future__ import annotations

from collections.abc import Sequence

from saip.common.timestamps import now
from saip.knowledge.config import MAX_TOP_K
from saip.knowledge.errors import InvalidRequest, NotFound, Refused
from saip.knowledge.items import MAX_NAME, default_pipeline, expect, fingerprint, listed, readable, slug
from saip.knowledge.knowledge import Knowledge
from saip.v1 import knowledge_pb2


class Pipelines:
    def __init__(self, knowledge: Knowledge) -> None:
        self._knowledge = knowledge
        self.catalog = knowledge.catalog

    def every(self) -> list[knowledge_pb2.Pipeline]:
        return [self.shown(p) for p in sorted(self.catalog.pipelines(), key=lambda p: p.name.casefold())]

    def shown(self, pipeline: knowledge_pb2.Pipeline) -> knowledge_pb2.Pipeline:
        """A copy with the scope's document names filled in (a deleted document shows as its id), the documents it
        searches now, and its fingerprint."""
        copy = knowledge_pb2.Pipeline()
        copy.CopyFrom(pipeline)
        del copy.document_names[:]
        for document_id in pipeline.document_ids:
            document = self.catalog.document(document_id)
            copy.document_names.append(document.name if document else document_id)
        del copy.scope_names[:]
        copy.scope_names.extend(item.name for item in self._searched(pipeline) if not isinstance(item, str))
        copy.fingerprint = self.fingerprint(pipeline)
        copy.delete_refused = self.delete_refusal(pipeline)
        return copy

    def delete_refusal(self, pipeline: knowledge_pb2.Pipeline, *, force: bool = False) -> str:
        """Why deleting `pipeline` is refused now, or empty; `force` is configuration's own reconciliation, which
        may delete what it declared but not what a published tool searches."""
        if pipeline.managed_by and not force:
            return (
                f"'{pipeline.name}' is managed by configuration; remove it from {pipeline.managed_by} in saip.yaml "
                "instead"
            )
        tools = [t.name for t in self.catalog.tools() if t.pipeline_id == pipeline.id]
        if tools:
            return (
                f"the knowledge tool(s) {listed(tools)} search '{pipeline.name}'; unpublish them first "
                "(saip_knowledge_unpublish_tool)"
            )
        return ""

    def _searched(self, pipeline: knowledge_pb2.Pipeline) -> list[knowledge_pb2.Document | str]:
        """The documents a search of the pipeline reads now (every document for an empty scope); the id of one that
        is gone."""
        if not pipeline.document_ids:
            return list(self._knowledge.documents())
        return [self.catalog.document(document_id) or document_id for document_id in pipeline.document_ids]

    def fingerprint(self, pipeline: knowledge_pb2.Pipeline) -> str:
        """The pipeline's settings as stored with the documents it searches now: what an approval of publishing a
        tool over it, or of deleting it, binds (a document ingested into an all-documents scope changes it too)."""
        stored = knowledge_pb2.Pipeline()
        stored.CopyFrom(pipeline)
        for field in ("document_names", "scope_names", "fingerprint"):
            stored.ClearField(field)
        searched = self._searched(pipeline)
        return fingerprint(stored, *(item if isinstance(item, str) else fingerprint(item) for item in searched))

    def named(self, name: str) -> knowledge_pb2.Pipeline:
        found = self.catalog.pipeline(slug(name)) if name.strip() else None
        if found is None:
            raise NotFound(f"no pipeline named '{name}'; the pipelines are {listed([p.name for p in self.every()])}")
        return found

    async def apply(
        self,
        name: str,
        documents: Sequence[str],
        *,
        top_k: int | None = None,
        threshold: float | None = None,
        rerank: bool | None = None,
        managed_by: str = "",
    ) -> tuple[knowledge_pb2.Pipeline, bool]:
        """Create or update a pipeline; settings not given keep their current (or default) value."""
        name = name.strip()
        if not name or len(name) > MAX_NAME:
            raise InvalidRequest(f"a pipeline needs a name of 1 to {MAX_NAME} characters")
        readable(name, "a pipeline's")
        existing = self.catalog.pipeline(slug(name))
        if existing is not None and existing.managed_by and not managed_by:
            raise Refused(
                f"'{existing.name}' is managed by configuration; change it under {existing.managed_by} in saip.yaml "
                "instead"
            )
        if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"topK must be between 1 and {MAX_TOP_K}, not {top_k}")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InvalidRequest(f"threshold must be between 0 and 1, not {threshold}")
        ids: list[str] = []
        missing: list[str] = []
        for document_name in documents:
            found = self.catalog.document(slug(document_name)) if document_name.strip() else None
            if found is None:
                missing.append(document_name)
            elif found.id not in ids:
                ids.append(found.id)
        if missing:
            raise NotFound(
                f"no document named {listed(missing)}; a pipeline scopes existing documents: "
                f"{listed([d.name for d in self._knowledge.documents()])} (an empty list means every document)"
            )
        base = existing or default_pipeline()
        pipeline = knowledge_pb2.Pipeline(
            id=slug(name),
            name=existing.name if existing else name,
            document_ids=ids,
            top_k=top_k if top_k is not None else base.top_k,
            threshold=threshold if threshold is not None else base.threshold,
            rerank=rerank if rerank is not None else base.rerank,
            managed_by=managed_by,
            updated_at=now(),
        )
        await self.catalog.put_pipeline(pipeline, create=existing is None)
        return self.shown(pipeline), existing is None

    async def delete(self, name: str, *, force: bool = False, expected: str = "") -> knowledge_pb2.Pipeline:
        """Delete the pipeline, as it was when an approval described it (`expected`, its fingerprint) or not at all."""
        pipeline = self.named(name)
        expect(f"the pipeline '{pipeline.name}'", expected, self.fingerprint(pipeline), "saip_knowledge_list_pipelines")
        if refusal := self.delete_refusal(pipeline, force=force):
            raise Refused(refusal)
        await self.catalog.delete_pipeline(pipeline.id)
        return self.shown(pipeline)

    def scope(self, pipeline: knowledge_pb2.Pipeline) -> list[knowledge_pb2.Document]:
        """The pipeline's documents; refuses a scope that names a document that is gone."""
        if not pipeline.document_ids:
            return self._knowledge.documents()
        found = [(document_id, self.catalog.document(document_id)) for document_id in pipeline.document_ids]
        gone = [document_id for document_id, document in found if document is None]
        if gone:
            raise Refused(
                f"the pipeline '{pipeline.name}' scopes {listed(gone)}, which no longer exist; apply it again without "
                "them (saip_knowledge_apply_pipeline)"
            )
        return [document for _, document in found if document is not None]
