"""The rules of a shippable proposal over fake sources (authored, knowledge and exposed upstream tools): what validate
refuses and says, what a build writes, and which parts go out of date when their definitions move."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.canonical import canonical_json
from saip.shipped import bundle as bundle_files
from saip.shipyard import bundles
from saip.shipyard.errors import InvalidProposal
from saip.tools.upstream import ledger
from saip.v1 import knowledge_pb2, shipyard_pb2, upstream_pb2
from tests.unit.shipyard.fakes import FakeSources
from tests.unit.tools.specs import document
from tests.upstreams.running import ECHO, tool


def proposal(*tools: str, name: str = "ops") -> shipyard_pb2.BundleProposal:
    return shipyard_pb2.BundleProposal(name=name, description="Ops answers.", tools=list(tools))


def knowledge_tool(name: str = "runbook_search", sha256: str = "a" * 64) -> knowledge_pb2.KnowledgeToolDefinition:
    return knowledge_pb2.KnowledgeToolDefinition(
        tool=knowledge_pb2.KnowledgeTool(name=name, description="Searches the runbook."),
        pipeline=knowledge_pb2.Pipeline(name="All documents (simple)", top_k=5, threshold=0.35, rerank=True),
        documents=[knowledge_pb2.Document(ingest_id="i1", name="runbook.md", source="text", sha256=sha256)],
    )


def exposed(
    name: str, definition: dict[str, object], *, server_id: str = "notes", hitl: bool = False, withheld: str = ""
) -> upstream_pb2.ExposedTool:
    """A member as the tools service's composition view shows it: its accepted definition and ledger hash."""
    return upstream_pb2.ExposedTool(
        member=upstream_pb2.Member(server_id=server_id, tool=str(definition["name"]), alias=name, hitl=hitl),
        name=name,
        inherent_level=3,
        effective_level=2 if hitl else 3,
        served=not withheld,
        withheld=withheld,
        ledger_hash=ledger.fingerprint(definition),
        definition_json=canonical_json(definition),
    )


@pytest.fixture
def sources() -> FakeSources:
    found = FakeSources()
    found.author(document("adder"))
    found.author(document("keyed", staticVariables={"apiKey": "${OPS_API_KEY}"}))
    found.author(document("untested"), tested=False)
    found.author(document("leaky", staticVariables={"apiKey": "sk-live-0123456789abcdef0123"}))
    found.definitions["runbook_search"] = knowledge_tool()
    found.servers["notes"] = upstream_pb2.Server(
        id="notes",
        transport=upstream_pb2.TRANSPORT_STREAMABLE_HTTP,
        url="https://notes.example.com/mcp?tenant=${NOTES_TENANT}",
        headers={"Authorization": "Bearer ${NOTES_TOKEN}"},
        docs_url="https://notes.example.com/docs",
    )
    found.exposed["notes_echo"] = exposed("notes_echo", ECHO, hitl=True)
    found.exposed["notes_write"] = exposed("notes_write", tool("write"), withheld="the upstream changed its definition")
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
    assert "ghost: no authored tool, knowledge tool or exposed upstream member has this name" in problems
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


async def test_an_exposed_member_ships_with_its_server_references_pinned_hash_hitl_and_risk(
    sources: FakeSources, tmp_path: Path
) -> None:
    good = proposal("adder", "notes_echo")
    validation = await bundles.validate(sources, good)
    report = validation.report
    assert report.ok, report.problems
    [adder, echo] = report.tools
    assert (echo.kind, echo.risk_level, echo.hitl) == ("upstream", 2, True)
    assert list(echo.requirements) == ["NOTES_TENANT", "NOTES_TOKEN"] == list(report.requirements)
    assert not adder.hitl  # an L0 tool without an approval setting runs at once
    built = await bundles.build(sources, validation, good, 1, tmp_path / "bundle")
    part = bundle_files.read(tmp_path / "bundle").tools[1]
    assert part["server"] == {
        "id": "notes",
        "transport": "streamable-http",
        "url": "https://notes.example.com/mcp?tenant=${NOTES_TENANT}",
        "headers": {"Authorization": "Bearer ${NOTES_TOKEN}"},
        "docs_url": "https://notes.example.com/docs",
        "trust": "unknown",
    }
    assert (part["member"], part["definition"], part["hitl"]) == ("echo", ECHO, True)
    assert part["ledgerHash"] == part["definitionSha256"] == ledger.fingerprint(ECHO)
    assert built.document["requirements"] == ["NOTES_TENANT", "NOTES_TOKEN"]


async def test_an_exposed_member_that_is_withheld_unregistered_or_holds_a_value_is_refused(
    sources: FakeSources,
) -> None:
    sources.exposed["orphan"] = exposed("orphan", ECHO, server_id="gone")
    sources.servers["leaky"] = upstream_pb2.Server(
        id="leaky",
        transport=upstream_pb2.TRANSPORT_STREAMABLE_HTTP,
        url="https://leaky.example.com/mcp",
        headers={"Authorization": "Bearer sk-live-0123456789abcdef0123"},
    )
    sources.exposed["leaky_echo"] = exposed("leaky_echo", ECHO, server_id="leaky")
    report = (await bundles.validate(sources, proposal("notes_write", "orphan", "leaky_echo"))).report
    problems = "\n".join(report.problems)
    assert "notes_write: it is not served on saip's /mcp now (the upstream changed its definition)" in problems
    assert "orphan: its server 'gone' is not registered" in problems
    assert "leaky_echo: Header 'Authorization' of server 'leaky'" in problems
    assert not report.ok


async def test_an_exposed_member_goes_out_of_date_when_its_ledger_accepts_another_definition(
    sources: FakeSources, tmp_path: Path
) -> None:
    good = proposal("notes_echo")
    built = await bundles.build(sources, await bundles.validate(sources, good), good, 1, tmp_path / "bundle")
    [part] = built.tools
    server = shipyard_pb2.ShippedServer(
        parts=[shipyard_pb2.BundlePart(name="notes_echo", kind="upstream", definition_sha256=part["definitionSha256"])]
    )
    assert await bundles.stale(sources, server) == []
    sources.exposed["notes_echo"] = exposed("notes_echo", {**ECHO, "description": "Echo, and more."}, hitl=True)
    assert await bundles.stale(sources, server) == [
        "notes_echo: its upstream definition changed since the ship; ship the server again"
    ]
