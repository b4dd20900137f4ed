"""The JSON shapes of knowledge data, the same for the saip_knowledge_* tools (the AI) and the REST API (the person).

The views are declared parallel tables: one function per message, each a dict of the same shape."""

from __future__ import annotations

from typing import Any

from saip.common.words import when
from saip.v1 import knowledge_pb2 as pb


def document(found: pb.Document) -> dict[str, Any]:
    return {
        "name": found.name,
        "id": found.id,
        "title": found.title or None,
        "sourceKind": found.source_kind,
        "source": found.source,
        "mediaType": found.media_type,
        "sizeBytes": found.size_bytes,
        "chunks": found.chunks,
        "pages": found.pages or None,
        "keywords": list(found.keywords),
        "createdAt": when(found.created_at),
        "managedBy": found.managed_by or None,
    }


def pipeline(found: pb.Pipeline) -> dict[str, Any]:
    return {
        "name": found.name,
        "documents": list(found.document_names),
        "scope": "selected documents" if found.document_ids else "every document",
        "topK": found.top_k,
        "threshold": round(found.threshold, 4),
        "rerank": found.rerank,
        "managedBy": found.managed_by or None,
        "updatedAt": when(found.updated_at),
    }


def tool(found: pb.KnowledgeTool) -> dict[str, Any]:
    return {
        "name": found.name,
        "description": found.description,
        "pipeline": found.pipeline_name,
        "publishedAt": when(found.published_at),
    }


def hit(found: pb.SearchHit) -> dict[str, Any]:
    return {
        "document": found.document_name,
        "source": found.source,
        "position": found.position,
        "page": found.page or None,
        "score": round(found.score, 4),
        "relevance": round(found.relevance, 4),
        "text": found.text,
    }
