"""What a chunk is in the vector store, whichever engine holds it: the collection's name, its vector names, the
payload of a point and the hit it becomes. Both vector-store adapters (Qdrant Edge in-process, qdrant-client for a
server) store exactly this, so a snapshot taken from either holds the same points."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from saip.knowledge import sparse
from saip.knowledge.ports import Hit, IndexedChunk

COLLECTION = "saip_chunks"
VECTOR = "lexical"  # the BM25 sparse vector; the engine applies IDF (Modifier.IDF)
DENSE = "dense"  # the dense encoder's unit vector, compared by cosine
INGEST = "ingest"  # the payload key every filter uses: a chunk belongs to one ingest of one document


def collection(dense: tuple[str, int] | None) -> str:
    """Each dense model has its own collection: vectors of two models cannot be mixed, and a change of model leaves
    the old collection as it was (the service re-indexes from the originals into the new one)."""
    return f"{COLLECTION}_{dense[0]}" if dense else COLLECTION


def payload(ingest_id: str, document_id: str, item: IndexedChunk) -> dict[str, Any]:
    return {
        INGEST: ingest_id,
        "document": document_id,
        "position": item.chunk.index,
        "start": item.chunk.start,
        "end": item.chunk.end,
        "page": item.chunk.page,
        "text": item.chunk.text,
    }


def hit(stored: Mapping[str, Any], score: float) -> Hit:
    return Hit(
        ingest_id=str(stored[INGEST]),
        position=int(stored["position"]),
        start=int(stored["start"]),
        end=int(stored["end"]),
        page=int(stored.get("page") or 0),
        score=float(score),
        text=str(stored["text"]),
    )


@dataclass(frozen=True)
class StoredPoint:
    """One chunk as a vector store holds it, read out to be written into a snapshot."""

    id: str
    vector: sparse.SparseVector
    dense: list[float] | None
    payload: dict[str, Any]


def stored(point_id: object, vectors: Any, stored_payload: Mapping[str, Any] | None) -> StoredPoint:
    """A point read back from either engine: both return the sparse vector with `indices` and `values`."""
    vectors = vectors or {}
    lexical, dense = vectors[VECTOR], vectors.get(DENSE)
    return StoredPoint(
        id=str(point_id),
        vector=sparse.SparseVector(tuple(lexical.indices), tuple(lexical.values)),
        dense=list(dense) if dense is not None else None,
        payload=dict(stored_payload or {}),
    )
