"""The knowledge rules change exactly what an approval described, or refuse and change nothing: publishing a tool over
a pipeline whose scope moved (a document added to it, or ingested into an every-document scope), unpublishing a tool
published again, deleting a document ingested again or a pipeline re-scoped."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.knowledge.errors import Refused
from tests.unit.knowledge import fakes
from tests.unit.knowledge.fakes import Faked

RUNBOOK = "# NATS runbook\n\nRestart the NATS broker with systemctl when clients report a stale connection."
PAYROLL = "# Payroll\n\nThe salaries of every employee, by name, and the bank accounts they are paid into."


def changed(what: str, asked: str, now: str, reads: str) -> str:
    return (
        f"{what} changed since the question was asked (revision {asked}, now {now}); read it again and ask again "
        f"({reads} reads it)"
    )


async def ops_over_runbook(root: Path) -> Faked:
    """The rules with one document, 'Runbook', and the pipeline 'Ops' scoped to it."""
    faked = fakes.rules(root)
    await faked.knowledge.ingest("text", RUNBOOK, "Runbook")
    await faked.pipelines.apply("Ops", ["Runbook"])
    return faked


@pytest.fixture
async def rules(tmp_path: Path) -> Faked:
    return await ops_over_runbook(tmp_path)


async def test_a_publish_over_a_scope_that_grew_is_refused_and_publishes_nothing(rules: Faked) -> None:
    pipeline = rules.pipelines.shown(rules.pipelines.named("Ops"))
    assert list(pipeline.scope_names) == ["Runbook"]
    await rules.knowledge.ingest("text", PAYROLL, "Payroll")
    await rules.pipelines.apply("Ops", ["Runbook", "Payroll"])
    now = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))
    with pytest.raises(Refused) as refused:
        await rules.tools.publish("ops_answers", "Answers ops questions.", "Ops", pipeline.fingerprint)
    assert str(refused.value) == changed(
        "the pipeline 'Ops'", pipeline.fingerprint, now, "saip_knowledge_list_pipelines"
    )
    assert rules.catalog.tools() == []
    assert (await rules.tools.publish("ops_answers", "Answers ops questions.", "Ops", now)).name == "ops_answers"


async def test_a_document_ingested_into_an_every_document_scope_changes_what_it_serves(rules: Faked) -> None:
    every = rules.pipelines.shown(rules.pipelines.named("All documents (simple)"))
    assert list(every.scope_names) == ["Runbook"]
    await rules.knowledge.ingest("text", PAYROLL, "Payroll")
    grown = rules.pipelines.shown(rules.pipelines.named("All documents (simple)"))
    assert list(grown.scope_names) == ["Payroll", "Runbook"] and grown.fingerprint != every.fingerprint
    with pytest.raises(Refused, match="the pipeline 'All documents \\(simple\\)' changed since the question"):
        await rules.tools.publish(
            "everything", "Answers from every document.", "All documents (simple)", every.fingerprint
        )
    assert rules.catalog.tools() == []


async def test_unpublishing_a_tool_published_again_is_refused_and_keeps_it(rules: Faked) -> None:
    await rules.tools.publish("ops_answers", "Answers ops questions.", "Ops")
    asked = rules.tools.named("ops_answers").fingerprint
    await rules.tools.unpublish("ops_answers")
    await rules.tools.publish("ops_answers", "Answers every question, from the payroll too.", "All documents (simple)")
    now = rules.tools.named("ops_answers").fingerprint
    with pytest.raises(Refused) as refused:
        await rules.tools.unpublish("ops_answers", asked)
    assert str(refused.value) == changed("the knowledge tool 'ops_answers'", asked, now, "saip_knowledge_status")
    assert [tool.name for tool in rules.catalog.tools()] == ["ops_answers"]


async def test_deleting_a_document_ingested_again_is_refused_and_keeps_it(rules: Faked) -> None:
    await rules.knowledge.ingest("text", PAYROLL, "Payroll")
    asked = rules.knowledge.described("Payroll").fingerprint
    await rules.knowledge.delete_document("Payroll")
    await rules.knowledge.ingest("text", PAYROLL + "\n\nAnd their addresses.", "Payroll")
    now = rules.knowledge.described("Payroll").fingerprint
    with pytest.raises(Refused) as refused:
        await rules.knowledge.delete_document("Payroll", expected=asked)
    assert str(refused.value) == changed("the document 'Payroll'", asked, now, "saip_knowledge_list_documents")
    assert "Payroll" in [document.name for document in rules.knowledge.documents()]


async def test_deleting_a_pipeline_re_scoped_is_refused_and_keeps_it(rules: Faked) -> None:
    asked = rules.pipelines.shown(rules.pipelines.named("Ops")).fingerprint
    await rules.pipelines.apply("Ops", [], top_k=9)
    now = rules.pipelines.fingerprint(rules.pipelines.named("Ops"))
    with pytest.raises(Refused) as refused:
        await rules.pipelines.delete("Ops", expected=asked)
    assert str(refused.value) == changed("the pipeline 'Ops'", asked, now, "saip_knowledge_list_pipelines")
    assert rules.pipelines.named("Ops").top_k == 9
    assert (await rules.pipelines.delete("Ops", expected=now)).name == "Ops"
