"""Names, ids and stamps of the catalog's items, and the default pipeline every first document gets."""

from __future__ import annotations

import re
from collections.abc import Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from saip.knowledge.config import DEFAULT_THRESHOLD, DEFAULT_TOP_K
from saip.knowledge.errors import InvalidRequest
from saip.v1 import knowledge_pb2

DEFAULT_PIPELINE = "All documents (simple)"
MAX_NAME = 200


def slug(name: str) -> str:
    """The id of a name: lower case letters, digits and dashes (two names with one slug are one name)."""
    value = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:64].strip("-")
    if not value:
        raise InvalidRequest(f"'{name}' has no letters or digits; choose a name with some")
    return value


def now() -> Timestamp:
    stamp = Timestamp()
    stamp.GetCurrentTime()
    return stamp


def default_pipeline() -> knowledge_pb2.Pipeline:
    return knowledge_pb2.Pipeline(
        id=slug(DEFAULT_PIPELINE), name=DEFAULT_PIPELINE, top_k=DEFAULT_TOP_K, threshold=DEFAULT_THRESHOLD, rerank=True
    )


def listed(items: Sequence[str]) -> str:
    """Names as a refusal lists them: 'a', 'b' (or that there are none yet)."""
    return ", ".join(f"'{item}'" for item in items) if items else "none yet"
