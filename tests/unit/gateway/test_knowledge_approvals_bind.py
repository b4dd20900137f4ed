"""Approvals bind what they describe, in the knowledge area: a publish names the documents its tool will serve, and a
change of them (or of a document, pipeline or tool a delete or unpublish names) while the person reads the question
is refused with nothing changed, in both protocol eras.

The knowledge service here is its rules over their in-memory fakes (tests/unit/knowledge/fakes.py), reached through
`RulesClient`, which calls them in-process and turns their refusals into the gateway's, as the gRPC client does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.errors import ServiceRefused, sentence
from saip.knowledge.errors import KnowledgeError
from saip.v1 import knowledge_pb2 as pb
from tests.unit.gateway.probe import harness
from tests.unit.gateway.test_approvals_bind import ERAS, LEGACY, call, meanwhile, unasked
from tests.unit.knowledge.fakes import Faked
from tests.unit.knowledge.test_expected_fingerprints import PAYROLL, ops_over_runbook

T = TypeVar("T")


class RulesClient:
    """The knowledge area's client over the knowledge rules in this process."""

    def __init__(self, rules: Faked) -> None:
        self.rules = rules

    def _service(self, answer: Callable[[], T]) -> T:
        try:
            return answer()
        except KnowledgeError as exc:
            raise ServiceRefused(str(exc)) from None

    async def _changing(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except KnowledgeError as exc:
            raise ServiceRefused(str(exc)) from None

    async def document(self, name: str) -> pb.Document:
        return self._service(lambda: self.rules.knowledge.described(name))

    async def pipeline(self, name: str) -> pb.Pipeline:
        return self._service(lambda: self.rules.pipelines.shown(self.rules.pipelines.named(name)))

    async def tool(self, name: str) -> pb.KnowledgeTool:
        return self._service(lambda: self.rules.tools.named(name))

    async def delete_document(self, name: str, expected: str = "") -> pb.DeleteDocumentReply:
        document, chunks = await self._changing(self.rules.knowledge.delete_document(name, expected=expected))
        return pb.DeleteDocumentReply(document=document, chunks_deleted=chunks)

    async def delete_pipeline(self, name: str, expected: str = "") -> pb.DeletePipelineReply:
        return pb.DeletePipelineReply(
            pipeline=await self._changing(self.rules.pipelines.delete(name, expected=expected))
        )

    async def publish_tool(self, request: pb.PublishKnowledgeToolRequest) -> pb.PublishKnowledgeToolReply:
        published = self.rules.tools.publish(
            request.name, request.description, request.pipeline, request.expected_fingerprint
        )
        return pb.PublishKnowledgeToolReply(tool=await self._changing(published))

    async def unpublish_tool(self, name: str, expected: str = "") -> pb.UnpublishKnowledgeToolReply:
        return pb.UnpublishKnowledgeToolReply(tool=await self._changing(self.rules.tools.unpublish(name, expected)))


@pytest.fixture
async def rules(tmp_path: Path) -> Faked:
    return await ops_over_runbook(tmp_path)


def changed(tool: str, what: str, asked: str, now: str, reads: str, era: str) -> str:
    said = f"{what} changed since the question was asked (revision {asked}, now {now}); read it again and ask again"
    return sentence(f"{said} ({reads} reads it)") if era == LEGACY else f"Tool '{tool}' was not run: {said}."


@pytest.mark.parametrize("era", ERAS)
async def test_a_publish_approved_over_the_runbook_does_not_serve_the_payroll(
    tmp_path: Path, rules: Faked, era: str
) -> None:
    h = harness(tmp_path, others=[KnowledgeArea(RulesClient(rules), set)])  # type: ignore[arg-type]
    asked = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))

    async def widen() -> None:
        await rules.knowledge.ingest("text", PAYROLL, "Payroll")
        await rules.pipelines.apply("Ops", ["Runbook", "Payroll"])

    questions: list[str] = []
    arguments = {"name": "ops_answers", "description": "Answers ops questions.", "pipeline": "Ops"}
    said = await call(h, era, "saip_knowledge_publish_tool", arguments, meanwhile(widen, questions))
    assert "searching the pipeline 'Ops' over 'Runbook':" in questions[0]
    now = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))
    pipeline = "saip_knowledge_list_pipelines"
    assert said == changed("saip_knowledge_publish_tool", "the pipeline 'Ops'", asked, now, pipeline, era)
    assert rules.catalog.tools() == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_unpublish_approved_for_one_tool_keeps_the_tool_published_again(
    tmp_path: Path, rules: Faked, era: str
) -> None:
    await rules.tools.publish("ops_answers", "Answers ops questions.", "Ops")
    asked = rules.tools.named("ops_answers").fingerprint
    h = harness(tmp_path, others=[KnowledgeArea(RulesClient(rules), set)])  # type: ignore[arg-type]

    async def republish() -> None:
        await rules.tools.unpublish("ops_answers")
        await rules.tools.publish("ops_answers", "Answers from every document.", "All documents (simple)")

    said = await call(h, era, "saip_knowledge_unpublish_tool", {"name": "ops_answers"}, meanwhile(republish, []))
    now = rules.tools.named("ops_answers").fingerprint
    what = "the knowledge tool 'ops_answers'"
    assert said == changed("saip_knowledge_unpublish_tool", what, asked, now, "saip_knowledge_status", era)
    assert [tool.name for tool in rules.catalog.tools()] == ["ops_answers"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_delete_approved_for_one_document_keeps_the_one_ingested_again(
    tmp_path: Path, rules: Faked, era: str
) -> None:
    await rules.knowledge.ingest("text", PAYROLL, "Payroll")
    asked = rules.knowledge.described("Payroll").fingerprint
    h = harness(tmp_path, others=[KnowledgeArea(RulesClient(rules), set)])  # type: ignore[arg-type]

    async def reingest() -> None:
        await rules.knowledge.delete_document("Payroll")
        await rules.knowledge.ingest("text", PAYROLL + "\n\nAnd their addresses.", "Payroll")

    questions: list[str] = []
    said = await call(h, era, "saip_knowledge_delete_document", {"name": "Payroll"}, meanwhile(reingest, questions))
    assert "delete the document 'Payroll' and its one chunk." in questions[0]
    now = rules.knowledge.described("Payroll").fingerprint
    what, reads = "the document 'Payroll'", "saip_knowledge_list_documents"
    assert said == changed("saip_knowledge_delete_document", what, asked, now, reads, era)
    assert "Payroll" in [document.name for document in rules.knowledge.documents()]


@pytest.mark.parametrize("era", ERAS)
async def test_a_pipeline_delete_approved_for_one_scope_keeps_the_pipeline_re_scoped(
    tmp_path: Path, rules: Faked, era: str
) -> None:
    asked = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))
    h = harness(tmp_path, others=[KnowledgeArea(RulesClient(rules), set)])  # type: ignore[arg-type]

    async def rescope() -> None:
        await rules.pipelines.apply("Ops", [])

    questions: list[str] = []
    said = await call(h, era, "saip_knowledge_delete_pipeline", {"name": "Ops"}, meanwhile(rescope, questions))
    assert "delete the pipeline 'Ops', searching 'Runbook' (the documents stay)" in questions[0]
    now = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))
    pipeline = "saip_knowledge_list_pipelines"
    assert said == changed("saip_knowledge_delete_pipeline", "the pipeline 'Ops'", asked, now, pipeline, era)
    assert rules.pipelines.named("Ops").document_ids == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_delete_the_service_would_refuse_is_refused_before_the_person_is_asked(
    tmp_path: Path, rules: Faked, era: str
) -> None:
    await rules.tools.publish("ops_answers", "Answers ops questions.", "Ops")
    h = harness(tmp_path, others=[KnowledgeArea(RulesClient(rules), set)])  # type: ignore[arg-type]
    in_scope = await unasked(h, era, "saip_knowledge_delete_document", {"name": "Runbook"})
    searched = await unasked(h, era, "saip_knowledge_delete_pipeline", {"name": "Ops"})
    # The service's clauses, as a sentence: what the same refusal reads through the REST API.
    assert in_scope == (
        "'Runbook' is in the scope of the pipeline(s) 'Ops'; apply them without it (saip_knowledge_apply_pipeline) "
        "or delete them first."
    )
    assert searched == (
        "The knowledge tool(s) 'ops_answers' search 'Ops'; unpublish them first (saip_knowledge_unpublish_tool)."
    )
    assert [document.name for document in rules.knowledge.documents()] == ["Runbook"]
    assert "Ops" in [pipeline.name for pipeline in rules.catalog.pipelines()]
