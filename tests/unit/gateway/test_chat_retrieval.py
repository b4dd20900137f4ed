"""A chat turn's knowledge source over a hand-written knowledge service: the passages numbered with their sources as
the model reads them, what fits in the passages' share of the request, a pipeline that finds nothing, a prompt longer
than a query, and a refusal in the chat's words."""

from __future__ import annotations

import pytest

from saip.gateway.areas.chat.retrieval import PASSAGE_CHARS, QUERY_CHARS, retrieve
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import ServiceRefused
from saip.v1 import gateway_pb2
from saip.v1 import knowledge_pb2 as pb


class Knowledge(KnowledgeClient):
    """The knowledge service's Search, answering from a list (or refusing with a sentence)."""

    def __init__(self, *hits: pb.SearchHit, refusal: str = "") -> None:
        super().__init__(ServiceChannel("knowledge", None))
        self.hits = hits
        self.refusal = refusal
        self.requests: list[pb.SearchRequest] = []

    async def search(self, request: pb.SearchRequest) -> pb.SearchReply:
        self.requests.append(request)
        if self.refusal:
            raise ServiceRefused(self.refusal)
        return pb.SearchReply(hits=self.hits, pipeline=pb.Pipeline(name=request.pipeline))


def hit(document: str, position: int, text: str, *, source: str = "", page: int = 0) -> pb.SearchHit:
    return pb.SearchHit(
        document_name=document, position=position, text=text, source=source, page=page, relevance=1.0 / (position + 1)
    )


async def test_the_passages_reach_the_model_numbered_with_their_sources_and_the_turn_keeps_them() -> None:
    knowledge = Knowledge(
        hit("runbook.md", 0, "Restart NATS with systemctl.", source="/docs/runbook.md"),
        hit("notes.pdf", 2, "Qdrant keeps the vectors.", source="/docs/notes.pdf", page=3),
    )

    given = await retrieve(knowledge, "ops", "How do I restart NATS? " * 200)

    [request] = knowledge.requests
    assert (request.pipeline, len(request.query)) == ("ops", QUERY_CHARS)
    assert given.context.endswith(
        "[1] runbook.md, passage 0 (/docs/runbook.md)\nRestart NATS with systemctl.\n\n"
        "[2] notes.pdf, passage 2, page 3 (/docs/notes.pdf)\nQdrant keeps the vectors."
    )
    assert given.context.startswith("Passages the knowledge pipeline 'ops' found for the user's question follow")
    assert list(given.sources) == [
        gateway_pb2.ChatSource(document="runbook.md", source="/docs/runbook.md", position=0, relevance=1.0),
        gateway_pb2.ChatSource(document="notes.pdf", source="/docs/notes.pdf", position=2, page=3, relevance=0.3333),
    ]
    assert (given.described(), given.warning) == ("2 passages from the knowledge pipeline 'ops'", None)


async def test_only_the_passages_that_fit_are_given_and_named_the_best_one_cut_if_it_must_be() -> None:
    half = "w" * (PASSAGE_CHARS // 2)
    fitting = await retrieve(Knowledge(hit("a", 0, half), hit("b", 1, half)), "ops", "q")
    alone = await retrieve(Knowledge(hit("a", 0, "x" * (PASSAGE_CHARS * 2))), "ops", "q")

    assert [source.document for source in fitting.sources] == ["a"]
    assert "[2]" not in fitting.context
    assert [source.document for source in alone.sources] == ["a"]
    assert alone.context.endswith("x [cut]") and len(alone.context) < PASSAGE_CHARS + 500


async def test_a_pipeline_that_finds_nothing_tells_the_model_and_warns_the_caller() -> None:
    given = await retrieve(Knowledge(), "ops", "anything")

    assert given.sources == ()
    assert given.context == (
        "The knowledge pipeline 'ops' found no passage for the user's question; say so if the answer needs one."
    )
    assert given.warning == (
        "The knowledge pipeline 'ops' found no passage for the prompt; the model answered without one."
    )


async def test_a_pipeline_the_service_refuses_is_refused_in_the_chats_words() -> None:
    knowledge = Knowledge(refusal="no pipeline named 'payroll'; the pipelines are 'ops'")

    with pytest.raises(ServiceRefused) as refused:
        await retrieve(knowledge, "payroll", "salaries")

    assert str(refused.value) == (
        "The knowledge pipeline 'payroll' cannot be this turn's source: no pipeline named 'payroll'; the pipelines "
        "are 'ops'. saip_knowledge_list_pipelines lists the pipelines; leave pipeline out to ask without one."
    )
