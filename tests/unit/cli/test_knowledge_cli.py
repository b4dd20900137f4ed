"""`saip knowledge ingest PATH` reads a relative path as a shell does when it names a file where the command runs;
any other goes to the service as given, which answers it ("Paths are explicit"). Text or a file it cannot send is
refused before anything is sent, saying what to do instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from saip.cli.group import cli
from saip.cli.knowledge import UPLOAD_LIMIT, local_path
from saip.gateway.areas.knowledge.inputs import MAX_UPLOAD

INGEST = ["--url", "http://127.0.0.1:1", "--admin-token", "t", "knowledge", "ingest"]


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


def test_text_on_standard_input_that_is_not_utf_8_is_refused_as_such() -> None:
    result = CliRunner().invoke(cli, [*INGEST, "--text", "-"], input=b"\xff\xfe binary")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert (result.exit_code, result.output) == (
        1,
        "Error: standard input is not UTF-8 text; --text takes text (a file of this machine goes with --upload)\n",
    )


def test_a_file_over_the_gateway_s_upload_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    assert UPLOAD_LIMIT == MAX_UPLOAD
    large = tmp_path / "large.pdf"
    with large.open("wb") as out:
        out.truncate(5 * 1024 * 1024)
    result = CliRunner().invoke(cli, [*INGEST, "--upload", str(large)])
    assert (result.exit_code, result.output) == (
        1,
        f"Error: {large} is 5.0 MiB and --upload sends up to 3 MiB: copy it into an ingest root (`saip knowledge "
        "status` names them) and ingest it by its absolute path\n",
    )
