"""`saip knowledge ingest PATH` reads a relative path as a shell does when it names a file where the command runs;
any other goes to the service as given, which answers it ("Paths are explicit")."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.cli.knowledge import local_path


def test_a_relative_path_to_a_file_here_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "runbook.md").write_text("# Runbook\n")
    monkeypatch.chdir(tmp_path)
    assert local_path("ingest/runbook.md") == str(tmp_path / "ingest" / "runbook.md")
    assert local_path("./ingest/../ingest/runbook.md") == str(tmp_path / "ingest" / "runbook.md")


def test_a_symlink_here_stays_one_for_the_service_to_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "target.md").write_text("# Target\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "target.md")
    monkeypatch.chdir(tmp_path)
    assert local_path("link.md") == str(tmp_path / "link.md")


@pytest.mark.parametrize("given", ["notes.md", "ingest", "/srv/ingest/notes.md"])
def test_any_other_path_is_sent_as_given(given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ingest").mkdir()
    monkeypatch.chdir(tmp_path)
    assert local_path(given) == given
