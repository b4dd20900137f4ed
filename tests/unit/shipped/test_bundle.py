"""saip-bundle.json: its schema and hashes are checked on read and on write, and every refusal says what to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from saip.shipped import bundle
from saip.shipped.bundle import BUNDLE_FILE, BundleInvalid
from tests.unit.shipped.bundles import sealed, written


def test_a_written_bundle_reads_back_with_every_hash_checked(tmp_path: Path) -> None:
    shipped = written(tmp_path)
    again = bundle.read(tmp_path / BUNDLE_FILE)
    assert again.document == shipped.document and again.sha256 == shipped.sha256
    assert bundle.read(tmp_path).name == "ops"  # the folder holding it reads the same


def test_a_document_that_fails_the_schema_is_refused_naming_each_problem(tmp_path: Path) -> None:
    document = sealed(transport="websocket")
    del document["description"]
    with pytest.raises(BundleInvalid) as refused:
        bundle.verify(document, tmp_path)
    assert "'description' is a required property" in str(refused.value)
    assert "transport: 'websocket' is not one of" in str(refused.value)
    with pytest.raises(BundleInvalid, match=r"does not fit saip-bundle\.schema\.json"):
        bundle.write(tmp_path, document)
    assert not (tmp_path / BUNDLE_FILE).exists()


def test_a_changed_part_or_whole_is_refused_by_its_hash(tmp_path: Path) -> None:
    written(tmp_path)
    path = tmp_path / BUNDLE_FILE
    document = json.loads(path.read_text())
    document["tools"][0]["spec"]["code"] = "return { sum: 0 };"
    path.write_text(json.dumps(document))
    with pytest.raises(BundleInvalid, match="the part 'adder' does not match its sha256"):
        bundle.read(path)
    document = sealed()
    document["description"] = "Something else."
    with pytest.raises(BundleInvalid, match="the bundle does not match its sha256"):
        bundle.verify(document, tmp_path)


def test_a_missing_or_changed_snapshot_is_refused(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshots" / "kb.snapshot.gz"
    snapshot.parent.mkdir()
    snapshot.write_bytes(b"chunks")
    part = {
        "kind": "knowledge",
        "name": "kb",
        "description": "Searches.",
        "pipeline": {"name": "All", "topK": 5, "threshold": 0.35, "rerank": True},
        "documents": [],
        "snapshot": {"path": "snapshots/kb.snapshot.gz", "bytes": 6, "sha256": bundle.file_sha256(snapshot)},
        "riskLevel": 0,
        "definitionSha256": "0" * 64,
    }
    document = bundle.seal({**sealed(), "tools": [part]})
    assert bundle.verify(document, tmp_path).snapshot(part) == snapshot
    snapshot.write_bytes(b"CHUNKS")
    with pytest.raises(BundleInvalid, match="the snapshot of 'kb' does not match its sha256"):
        bundle.verify(document, tmp_path)
    snapshot.unlink()
    with pytest.raises(BundleInvalid, match=r"the snapshot of 'kb' .* is missing beside the bundle"):
        bundle.verify(document, tmp_path)


def test_unreadable_files_and_doubled_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BundleInvalid, match="there is no bundle at"):
        bundle.read(tmp_path / BUNDLE_FILE)
    (tmp_path / BUNDLE_FILE).write_text("{not json")
    with pytest.raises(BundleInvalid, match="is not a readable JSON bundle"):
        bundle.read(tmp_path)
    twice = sealed()
    twice = bundle.seal({**twice, "tools": twice["tools"] * 2})
    with pytest.raises(BundleInvalid, match=r"names \['adder'\] more than once"):
        bundle.verify(twice, tmp_path)


def test_the_knowledge_definition_moves_with_what_the_tool_searches() -> None:
    pipeline = {"name": "All", "topK": 5, "threshold": 0.35, "rerank": True}
    documents = [{"sha256": "a"}, {"sha256": "b"}]
    first = bundle.knowledge_definition("kb", "Searches.", pipeline, documents)
    assert first == bundle.knowledge_definition("kb", "Searches.", pipeline, list(reversed(documents)))
    assert first != bundle.knowledge_definition("kb", "Searches.", {**pipeline, "topK": 6}, documents)
    assert first != bundle.knowledge_definition("kb", "Searches.", pipeline, [{"sha256": "a"}])


def test_an_upstream_part_carries_references_only_and_its_pinned_hash(tmp_path: Path) -> None:
    definition = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}, "annotations": None}
    part = {
        "kind": "upstream",
        "name": "notes_echo",
        "server": {"id": "notes", "transport": "streamable-http", "url": "https://notes.example.com/mcp"},
        "member": "echo",
        "definition": definition,
        "ledgerHash": "a" * 64,
        "riskLevel": 2,
        "hitl": True,
        "definitionSha256": "a" * 64,
    }
    part["server"]["headers"] = {"Authorization": "Bearer ${NOTES_TOKEN}"}
    bundle.verify(bundle.seal(sealed(tools=[part])), tmp_path)
    part["server"]["headers"] = {"Authorization": "Bearer sk-live-0123456789abcdef0123"}
    with pytest.raises(BundleInvalid, match=r"tools/0/server/headers/Authorization: .* does not match") as literal:
        bundle.verify(bundle.seal(sealed(tools=[part])), tmp_path)
    assert "sk-live-0123456789abcdef0123" not in str(literal.value)  # refused without being repeated
    del part["ledgerHash"]
    with pytest.raises(BundleInvalid, match="'ledgerHash' is a required property"):
        bundle.verify(bundle.seal(sealed(tools=[part])), tmp_path)
