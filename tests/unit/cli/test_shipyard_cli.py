"""`saip shipyard servers` says which version a live server runs when a later one was shipped since, and
`saip shipyard export` writes its files as the export gives them, over nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from saip.cli.shipyard import _servers, _write


def server(name: str, version: int, state: str, running: int | None) -> dict[str, Any]:
    endpoint = "http://127.0.0.1:9000/mcp" if running else None
    return {
        "name": name,
        "version": version,
        "state": state,
        "runningVersion": running,
        "runningEarlierVersion": running if running and running != version and state != "stopped" else None,
        "target": "local" if running else None,
        "endpoint": endpoint,
        "outOfDate": False,
    }


def test_a_live_server_behind_the_latest_version_shows_the_version_it_runs() -> None:
    @click.command()
    def show() -> None:
        _servers([server("ops", 2, "running", 1), server("idle", 2, "stopped", 1), server("new", 1, "shipped", None)])

    assert CliRunner().invoke(show).output.splitlines() == [
        "ops                       v2    running v1    local         http://127.0.0.1:9000/mcp",
        "idle                      v2    stopped       local         http://127.0.0.1:9000/mcp",
        "new                       v1    shipped       -",
    ]


def test_an_export_is_written_with_each_file_s_mode_and_never_over_anything_or_outside_its_folder(
    tmp_path: Path,
) -> None:
    files = [
        {"path": "compose.yaml", "mode": "0644", "encoding": "utf-8", "content": "services: {}\n"},
        {"path": "token.env", "mode": "0600", "encoding": "utf-8", "content": "SAIP_SHIPPED_TOKEN=t\n"},
        {"path": "bundle/snapshots/a.gz", "mode": "0644", "encoding": "base64", "content": "H4sI"},
    ]
    folder = tmp_path / "export"
    _write(folder, files)
    assert (folder / "token.env").stat().st_mode & 0o777 == 0o600
    assert (folder / "bundle" / "snapshots" / "a.gz").read_bytes() == b"\x1f\x8b\x08"
    with pytest.raises(click.ClickException, match="is not empty; name a new or empty folder with --into"):
        _write(folder, files)
    outside = [*files, {"path": "../evil", "mode": "0644", "encoding": "utf-8", "content": "x"}]
    with pytest.raises(click.ClickException, match="outside its folder"):
        _write(tmp_path / "other", outside)
    assert not (tmp_path / "other").exists() and not (tmp_path / "evil").exists()
