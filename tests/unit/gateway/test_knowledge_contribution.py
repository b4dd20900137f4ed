"""The knowledge area's gateway side: its tools, levels and summaries, and the names it refuses before any call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.areas.knowledge.contribution import GUIDE_URI, KnowledgeArea
from saip.gateway.areas.knowledge.inputs import PublishInput
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import InvalidArguments, ServiceRefused
from saip.gateway.surface.management import Level
from saip.v1 import knowledge_pb2 as pb


@pytest.fixture
async def area() -> AsyncIterator[KnowledgeArea]:
    # Port 1 has no service: a refusal that reached the client would fail as unreachable, not as refused.
    channel = ServiceChannel("knowledge", "127.0.0.1:1", deadline=0.5)
    try:
        yield KnowledgeArea(KnowledgeClient(channel), lambda: {"weather", "saip_monitor_hitl"})
    finally:
        await channel.close()


async def test_the_tools_and_their_levels_follow_the_specification(area: KnowledgeArea) -> None:
    levels = {tool.name: tool.level for tool in area.tools()}
    assert levels == {
        "saip_knowledge_status": Level.READ,
        "saip_knowledge_list_documents": Level.READ,
        "saip_knowledge_list_pipelines": Level.READ,
        "saip_knowledge_search": Level.READ,
        "saip_knowledge_suggest_tools": Level.READ,
        "saip_knowledge_ingest_document": Level.WRITE,
        "saip_knowledge_apply_pipeline": Level.WRITE,
        "saip_knowledge_delete_document": Level.DESTRUCTIVE,
        "saip_knowledge_delete_pipeline": Level.DESTRUCTIVE,
        "saip_knowledge_publish_tool": Level.DESTRUCTIVE,
        "saip_knowledge_unpublish_tool": Level.DESTRUCTIVE,
    }
    assert [r.uri for r in area.resources()] == [GUIDE_URI]
    assert [p.name for p in area.prompts()] == ["saip_knowledge_server"]


class OnePipeline:
    """The knowledge service as the publish plan reads it: one pipeline, its scope and fingerprint."""

    def __init__(self, pipeline: pb.Pipeline) -> None:
        self.found = pipeline

    async def pipeline(self, name: str) -> pb.Pipeline:
        return self.found


@pytest.mark.parametrize(
    ("pipeline", "scope"),
    [
        (pb.Pipeline(name="Ops", document_ids=["a"], scope_names=["Runbook"], fingerprint="f1"), "'Runbook'"),
        (pb.Pipeline(name="Ops", scope_names=["A", "B"], fingerprint="f1"), "every document (now 'A', 'B')"),
        (pb.Pipeline(name="Ops", fingerprint="f1"), "every document (now no document yet)"),
        (
            pb.Pipeline(name="Ops", document_ids=["x"], scope_names=[f"d{n}" for n in range(23)], fingerprint="f1"),
            ", ".join(f"'d{n}'" for n in range(20)) + " and 3 more",
        ),
    ],
    ids=["selected", "every-document", "empty", "many"],
)
async def test_the_publish_question_names_the_documents_the_tool_will_serve(pipeline: pb.Pipeline, scope: str) -> None:
    area = KnowledgeArea(OnePipeline(pipeline), set)  # type: ignore[arg-type]
    [publish] = [tool for tool in area.tools() if tool.name == "saip_knowledge_publish_tool"]
    arguments = publish.bind({"name": "ops_answers", "description": "Answers ops questions.", "pipeline": "ops"})
    approval = await publish.approval_for(arguments)
    assert approval.summary == (
        f"publish the knowledge tool 'ops_answers' on /mcp, searching the pipeline 'Ops' over {scope}: "
        "Answers ops questions."
    )
    assert approval.expected.revision("ops", "") == "f1"


async def test_the_approval_summary_says_exactly_what_will_happen(area: KnowledgeArea) -> None:
    tools = {tool.name: tool for tool in area.tools()}
    ingest = tools["saip_knowledge_ingest_document"]
    assert (await ingest.approval_for(ingest.bind({"path": "/srv/a.md", "name": "A"}))).summary == (
        "ingest the file /srv/a.md as 'A'"
    )


@pytest.mark.parametrize(
    "arguments",
    [{}, {"path": "/a.md", "text": "b"}, {"url": "https://x", "colour": "red"}],
    ids=["no-source", "two-sources", "unknown-property"],
)
async def test_ingest_arguments_are_bound_strictly(area: KnowledgeArea, arguments: dict[str, str]) -> None:
    [ingest] = [tool for tool in area.tools() if tool.name == "saip_knowledge_ingest_document"]
    with pytest.raises(InvalidArguments, match="Invalid arguments for 'saip_knowledge_ingest_document'"):
        ingest.bind(arguments)


@pytest.mark.parametrize("name", ["saip_docs", "SAIP_docs", "Saip_Docs"])
async def test_a_reserved_name_is_refused_with_the_rule_in_any_case(area: KnowledgeArea, name: str) -> None:
    with pytest.raises(ServiceRefused, match="starts with 'saip_', which is reserved for this app's own management"):
        await area.publish_tool(PublishInput(name=name, description="d", pipeline="Ops"))


async def test_a_name_another_source_serves_is_refused(area: KnowledgeArea) -> None:
    with pytest.raises(ServiceRefused, match="'weather' is already served on /mcp by another tool"):
        await area.publish_tool(PublishInput(name="weather", description="d", pipeline="Ops"))


async def test_the_prompt_sends_the_ai_to_the_guide_first(area: KnowledgeArea) -> None:
    [prompt] = area.prompts()
    rendered = await prompt.render({"topic": "the broker", "sources": "/srv/docs/runbook.md"})
    text = rendered.messages[0].content.text  # type: ignore[union-attr]
    assert text.index(GUIDE_URI) < text.index("saip_knowledge_ingest_document")
    assert "the broker" in text and "/srv/docs/runbook.md" in text
