"""The shipyard settings' shipped servers declared in configuration: dashed or underscored keys from saip.yaml, a
JSON list in the variable, and the declarations refused at start with the key (an unknown field or target, a name
declared twice)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from saip.common.settings import ConfigurationError
from saip.shipyard.config import ShipyardSettings


def test_declared_servers_are_read_from_saip_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "saip.yaml"
    config.write_text(
        "shipyard:\n"
        "  servers:\n"
        "    - {name: ops, description: Runbook answers., tools: [runbook_search, adder], target: local, port: 8400}\n"
        "    - {name: notes, description: Notes., tools: [notes_search], transport: stdio}\n"
    )
    monkeypatch.setenv("SAIP_CONFIG", str(config))

    ops, notes = ShipyardSettings.load().shipyard_servers

    assert (ops.tools, ops.transport, ops.target, ops.port) == (
        ["runbook_search", "adder"],
        "streamable-http",
        "local",
        8400,
    )
    assert (notes.transport, notes.target, notes.port) == ("stdio", None, 0)


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (
            '[{"name": "ops", "description": "d", "tool": ["a"]}]',
            r"\[0\]\.tool \(SAIP_SHIPYARD_SERVERS\): Extra inputs",
        ),
        ('[{"name": "ops", "description": "d", "tools": []}]', r"\[0\]\.tools \(SAIP_SHIPYARD_SERVERS\): .*at least 1"),
        (
            '[{"name": "ops", "description": "d", "tools": ["a"], "target": "moon"}]',
            r"\[0\]\.target \(SAIP_SHIPYARD_SERVERS\): Input should be 'local', 'compose' or 'kubernetes'",
        ),
        (
            json.dumps([{"name": "ops", "description": "d", "tools": ["a"]}] * 2),
            r" \(SAIP_SHIPYARD_SERVERS\): .*ops are declared more than once; declare each server once",
        ),
    ],
)
def test_a_declaration_that_cannot_be_shipped_stops_the_start_naming_the_key(
    monkeypatch: pytest.MonkeyPatch, servers: str, message: str
) -> None:
    monkeypatch.setenv("SAIP_SHIPYARD_SERVERS", servers)
    with pytest.raises(ConfigurationError, match=r"shipyard\.servers" + message):
        ShipyardSettings.load()
