"""The knowledge settings: ingest roots as PATH does, the Qdrant switch, declared items checked at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.settings import ConfigurationError
from saip.knowledge.config import KnowledgeSettings


def test_ingest_roots_are_read_from_a_colon_separated_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SAIP_KNOWLEDGE_INGEST_ROOTS", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    settings = KnowledgeSettings.load()
    assert settings.ingest_roots == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]


def test_the_default_ingest_root_is_under_the_home(tmp_path: Path) -> None:
    assert KnowledgeSettings.load(home=tmp_path).ingest_roots == [tmp_path.resolve() / "ingest"]


def test_a_relative_ingest_root_is_refused_with_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"knowledge\.ingest-roots must be absolute paths; \['docs'\]"):
        KnowledgeSettings.load(knowledge_ingest_roots=["docs"])


def test_qdrant_url_wins_over_the_plain_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_URL", "http://qdrant:6333")
    assert KnowledgeSettings.load().qdrant_location == "http://qdrant:6333"
    monkeypatch.setenv("SAIP_QDRANT_URL", "http://other:6333")
    assert KnowledgeSettings.load().qdrant_location == "http://other:6333"


def test_no_qdrant_url_means_qdrant_edge_under_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QDRANT_URL", raising=False)
    settings = KnowledgeSettings.load(home=tmp_path)
    assert (settings.qdrant_location, settings.edge_path) == (None, tmp_path.resolve() / "qdrant-edge")
    assert settings.qdrant_path == tmp_path.resolve() / "qdrant"  # an earlier build's local mode, migrated from


def test_declared_items_take_dashed_keys_from_saip_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "saip.yaml"
    config.write_text(
        "knowledge:\n"
        "  documents:\n"
        "    - {name: Runbook, path: /srv/runbook.md}\n"
        "  pipelines:\n"
        "    - {name: Ops, documents: [Runbook], top-k: 3, threshold: 0.5}\n"
    )
    monkeypatch.setenv("SAIP_CONFIG", str(config))
    settings = KnowledgeSettings.load()
    [document], [pipeline] = settings.knowledge_documents, settings.knowledge_pipelines
    assert (document.name, document.path, document.url) == ("Runbook", "/srv/runbook.md", None)
    assert (pipeline.documents, pipeline.top_k, pipeline.threshold, pipeline.rerank) == (["Runbook"], 3, 0.5, True)


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ('[{"name": "Both", "path": "/a.md", "text": "b"}]', r"\[0\] \(SAIP_KNOWLEDGE_DOCUMENTS\): .*exactly one of"),
        ('[{"name": "None"}]', r"\[0\] \(SAIP_KNOWLEDGE_DOCUMENTS\): .*exactly one of path, url or text"),
        ('[{"name": "Typo", "pth": "/a.md"}]', r"\[0\]\.pth \(SAIP_KNOWLEDGE_DOCUMENTS\): Extra inputs"),
    ],
)
def test_a_declared_document_must_name_one_source(
    monkeypatch: pytest.MonkeyPatch, documents: str, message: str
) -> None:
    monkeypatch.setenv("SAIP_KNOWLEDGE_DOCUMENTS", documents)
    with pytest.raises(ConfigurationError, match=r"knowledge\.documents" + message):
        KnowledgeSettings.load()
