"""What the command line writes is whole or not there: an audit export whose download ends part way leaves no file
(and what stood at the path before stays), and an export's folder whose write fails leaves the disk as it was."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from saip.cli.group import cli
from saip.cli.shipyard import _write
from saip.cli.writes import whole_file
from tests.http_origin import QuietHandler, http_origin

BODY = b'{"cursor": 1}\n' * 100


@pytest.fixture
def breaking() -> Iterator[str]:
    """A gateway whose export promises more than it sends, then closes the connection."""

    class Gateway(QuietHandler):
        def do_GET(self) -> None:  # the name http.server calls
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(BODY) * 10))
            self.end_headers()
            self.wfile.write(BODY)
            self.wfile.flush()
            self.close_connection = True

    with http_origin(Gateway) as origin:
        yield origin


def test_an_export_whose_download_ends_part_way_leaves_the_file_as_it_was(breaking: str, tmp_path: Path) -> None:
    kept = tmp_path / "trail.jsonl"
    kept.write_text("yesterday's export\n")
    result = CliRunner().invoke(cli, ["--url", breaking, "--admin-token", "t", "audit", "export", "-o", str(kept)])
    assert result.exit_code == 1 and "the download from" in result.output and "ended" in result.output
    assert kept.read_text() == "yesterday's export\n"
    new = tmp_path / "new.jsonl"
    result = CliRunner().invoke(cli, ["--url", breaking, "--admin-token", "t", "audit", "export", "-o", str(new)])
    assert result.exit_code == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["trail.jsonl"]  # no partial copy either


def test_a_whole_file_stands_once_written_with_the_mode_a_plain_open_gives(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    with whole_file(path) as out:
        out.write(b"a,b\n")
        assert not path.exists()  # not before the end
    assert path.read_bytes() == b"a,b\n"
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()
    refused = pytest.raises(click.ClickException, match=r"cannot write .*missing/out.csv: No such file or directory")
    with refused, whole_file(tmp_path / "missing" / "out.csv"):
        pass


def test_an_export_folder_whose_write_fails_part_way_is_left_as_it_was(tmp_path: Path) -> None:
    files = [
        {"path": "compose.yaml", "mode": "0644", "encoding": "utf-8", "content": "services: {}\n"},
        {"path": "bundle/a.json", "mode": "0644", "encoding": "utf-8", "content": "{}"},
        {"path": "compose.yaml/x", "mode": "0644", "encoding": "utf-8", "content": "x"},  # under a file: fails
    ]
    folder = tmp_path / "new"
    with pytest.raises(click.ClickException, match=r"cannot write .*new: .*; nothing was left there"):
        _write(folder, files)
    assert not folder.exists()
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o750)
    with pytest.raises(click.ClickException, match="nothing was left there"):
        _write(empty, files)
    assert list(empty.iterdir()) == [] and empty.stat().st_mode & 0o777 == 0o750


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
