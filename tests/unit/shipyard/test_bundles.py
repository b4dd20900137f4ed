"""The rules of a shippable proposal over fake sources: what validate refuses and says, what a build writes, and
which parts go out of date when their definitions move."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.shipped import bundle as bundle_files
from saip.shipyard import bundles
from saip.shipyard.errors import InvalidProposal
from saip.v1 import knowledge_pb2, shipyard_pb2
from tests.unit.shipyard.fakes import FakeSources
from tests.unit.tools.specs import document


def proposal(*tools: str, name: str = "ops") -> shipyard_pb2.BundleProposal:
    return shipyard_pb2.BundleProposal(name=name, description="Ops answers.", tools=list(tools))


def knowledge_tool(name: str = "runbook_search", sha256: str = "a" * 64) -> knowledge_pb2.KnowledgeToolDefinition:
    return knowledge_pb2.KnowledgeToolDefinition(
        tool=knowledge_pb2.KnowledgeTool(name=name, description="Searches the runbook."),
        pipeline=knowledge_pb2.Pipeline(name="All documents (simple)", top_k=5, threshold=0.35, rerank=True),
        documents=[knowledge_pb2.Document(ingest_id="i1", name="runbook.md", source="text", sha256=sha256)],
    )


@pytest.fixture
def sources() -> FakeSources:
    found = FakeSources()
    found.author(document("adder"))
    found.author(document("keyed", staticVariables={"apiKey": "${OPS_API_KEY}"}))
    found.author(document("untested"), tested=False)
    found.author(document("leaky", staticVariables={"apiKey": "sk-live-0123456789abcdef0123"}))
    found.definitions["runbook_search"] = knowledge_tool()
    return found


async def test_a_good_proposal_lists_its_requirements_and_the_risk_of_each_tool_and_the_whole(
    sources: FakeSources,
) -> None:
    report = (await bundles.validate(sources, proposal("adder", "keyed", "runbook_search"))).report
    assert report.ok and list(report.problems) == []
    assert [(tool.name, tool.kind) for tool in report.tools] == [
        ("adder", "authored"),
        ("keyed", "authored"),
        ("runbook_search", "knowledge"),
    ]
    assert list(report.requirements) == ["OPS_API_KEY"]
    assert report.risk_level == max(tool.risk_level for tool in report.tools)


async def test_each_bad_part_of_a_proposal_is_named_with_what_to_do(sources: FakeSources) -> None:
    report = (await bundles.validate(sources, proposal("untested", "leaky", "saip_x", "ghost", name="saip_ops"))).report
    assert not report.ok
    problems = "\n".join(report.problems)
    assert "'saip_ops' starts with 'saip_'" in problems and "saip_x: 'saip_x' starts with 'saip_'" in problems
    assert "untested: its current revision has no Local Pass; run saip_tools_test" in problems
    assert "leaky: Static variable 'apiKey' looks like a secret" in problems
    assert "ghost: no authored or knowledge tool has this name" in problems
    assert "at least one tool" in "\n".join(bundles.proposal_problems(proposal()))


async def test_a_build_writes_a_sealed_bundle_and_refuses_an_invalid_proposal(
    sources: FakeSources, tmp_path: Path
) -> None:
    good = proposal("adder", "runbook_search")
    validation = await bundles.validate(sources, good)
    built = await bundles.build(sources, validation, good, 3, tmp_path / "bundle")
    assert built.version == 3 and bundle_files.read(tmp_path / "bundle").sha256 == built.sha256
    [_, knowledge] = built.tools
    assert knowledge["snapshot"]["path"] == "snapshots/runbook_search.snapshot.gz"
    bad = proposal("untested")
    with pytest.raises(InvalidProposal, match="the proposal has problems"):
        await bundles.build(sources, await bundles.validate(sources, bad), bad, 1, tmp_path / "other")


async def test_parts_go_out_of_date_when_their_definitions_move(sources: FakeSources, tmp_path: Path) -> None:
    good = proposal("adder", "runbook_search")
    built = await bundles.build(sources, await bundles.validate(sources, good), good, 1, tmp_path / "bundle")
    server = shipyard_pb2.ShippedServer(
        parts=[
            shipyard_pb2.BundlePart(name=part["name"], kind=part["kind"], definition_sha256=part["definitionSha256"])
            for part in built.tools
        ]
    )
    assert await bundles.stale(sources, server) == []
    sources.author(document("adder", description="Adds two integers, now described better."))
    sources.definitions["runbook_search"] = knowledge_tool(sha256="b" * 64)  # the document was ingested again
    assert await bundles.stale(sources, server) == [
        "adder: its authored definition changed since the ship; ship the server again",
        "runbook_search: its knowledge definition changed since the ship; ship the server again",
    ]
    del sources.authored_details["adder"]
    assert (await bundles.stale(sources, server))[0] == "adder: deleted since the ship"
