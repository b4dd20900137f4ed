"""`saip shipyard servers` says which version a live server runs when a later one was shipped since."""

from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner

from saip.cli.shipyard import _servers


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
