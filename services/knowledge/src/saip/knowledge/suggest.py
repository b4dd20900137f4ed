"""Knowledge tool suggestions: a search tool over a pipeline's scope, named and described from its documents."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from saip.v1 import knowledge_pb2

TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
MAX_NAME = 64


@dataclass(frozen=True)
class Suggestion:
    name: str
    description: str
    pipeline: str
    documents: list[str]
    published_as: list[str] = field(default_factory=list)


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.casefold()).strip("_")


def _topic(documents: Sequence[knowledge_pb2.Document]) -> list[str]:
    """The scope's keywords, each document's own ranking weighted so no single long document dominates."""
    votes: Counter[str] = Counter()
    for document in documents:
        for rank, word in enumerate(document.keywords):
            votes[word] += len(document.keywords) - rank
    return [word for word, _ in votes.most_common(6)]


def _label(document: knowledge_pb2.Document) -> str:
    return document.title or document.name


def _stem(document: knowledge_pb2.Document) -> str:
    return _snake(re.sub(r"\.[A-Za-z0-9]{1,8}$", "", document.name)) or _snake(document.title)


def tool_name(
    pipeline: knowledge_pb2.Pipeline, documents: Sequence[knowledge_pb2.Document], taken: Collection[str]
) -> str:
    """search_<what>: the document's name for one document, the scope's two leading keywords for several."""
    several = "_".join(_topic(documents)[:2]) or _snake(pipeline.name)
    what = _stem(documents[0]) if len(documents) == 1 else several
    base = ("search_" + (what or "documents"))[:MAX_NAME].rstrip("_-")
    name, number = base, 2
    while name in taken:
        suffix = f"_{number}"
        name, number = base[: MAX_NAME - len(suffix)] + suffix, number + 1
    return name


def description(documents: Sequence[knowledge_pb2.Document]) -> str:
    labels = [f"'{_label(document)}'" for document in documents]
    if len(labels) == 1:
        scope = f"the document {labels[0]}"
    elif len(labels) <= 4:
        scope = f"the documents {', '.join(labels[:-1])} and {labels[-1]}"
    else:
        scope = f"{len(labels)} documents, among them {', '.join(labels[:3])}"
    topic = _topic(documents)[:5]
    about = f" (about {', '.join(topic)})" if topic else ""
    return (
        f"Search {scope}{about}. Pass a question or keywords as `query` (and optionally `topK`); returns the most "
        "relevant passages with their document, position and score."
    )


def suggest(
    pipeline: knowledge_pb2.Pipeline,
    documents: Sequence[knowledge_pb2.Document],
    tools: Sequence[knowledge_pb2.KnowledgeTool],
    taken: Collection[str],
) -> Suggestion:
    return Suggestion(
        name=tool_name(pipeline, documents, taken),
        description=description(documents),
        pipeline=pipeline.name,
        documents=[document.name for document in documents],
        published_as=sorted(tool.name for tool in tools if tool.pipeline_id == pipeline.id),
    )
