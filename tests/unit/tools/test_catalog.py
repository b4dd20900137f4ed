"""The bundled starter catalog: every tool is a valid spec that passes its own Local Pass and is clean of poisoning."""

from __future__ import annotations

import json

import pytest

from saip.common.settings import ConfigurationError
from saip.sandbox.isolate import run_job
from saip.sandbox.job import Job
from saip.tools import catalog
from saip.tools.config import ToolsSettings
from saip.tools.risk import assess
from tests.unit.tools.specs import document

BUNDLED = catalog.bundled()


def test_the_catalog_holds_at_least_eight_tools() -> None:
    assert len(BUNDLED) >= 8


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_each_bundled_tool_passes_its_local_pass(name: str) -> None:
    tool = BUNDLED[name]
    arguments = {param.name: None for param in tool.params} | tool.test_arguments()
    outcome = run_job(Job(code=tool.code, arguments=arguments, statics=dict(tool.static_variables)))
    assert outcome.ok, outcome.error
    assert json.loads(outcome.result_json) is not None


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_each_bundled_tool_is_l0_and_clean(name: str) -> None:
    risk = assess(BUNDLED[name], other_tools=BUNDLED)
    assert (risk.level, risk.poisoning) == (0, ())


def test_the_answers_of_a_few_bundled_tools_are_right() -> None:
    def call(name: str, **arguments: object) -> object:
        tool = BUNDLED[name]
        bound = {param.name: None for param in tool.params} | arguments
        outcome = run_job(Job(code=tool.code, arguments=bound, statics={}))
        assert outcome.ok, outcome.error
        return json.loads(outcome.result_json)

    assert call("unit-convert", value=100, **{"from": "C", "to": "F"})["result"] == 212  # type: ignore[index]
    assert call("hash-text", text="abc", algorithm="SHA-1")["hex"] == "a9993e364706816aba3e25717850c26c9cd0d89d"  # type: ignore[index]
    assert call("date-calc", date="2024-02-28", addDays=1)["date"] == "2024-02-29T00:00:00.000Z"  # type: ignore[index]
    assert call("base64-codec", text="aMOpbGxv", action="decode")["result"] == "héllo"  # type: ignore[index]


def test_a_declared_tool_that_is_not_a_valid_spec_stops_the_start_naming_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"tools.declared\[1\]: Invalid tool spec: 'description' is required"):
        catalog.declared([document("first"), {"name": "second", "code": "return 1"}], "tools.declared")
    with pytest.raises(ConfigurationError, match="'twice' is declared twice"):
        catalog.declared([document("twice"), document("twice")], "tools.declared")


@pytest.mark.parametrize("variable", ["SAIP_TOOLS_DECLARED", "SAIP_TOOLS_UPSTREAM_SERVERS"])
def test_a_declared_list_nested_thousands_deep_stops_the_start_naming_the_key(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigurationError, match=rf"\({variable}\): the JSON is nested more than 64 levels deep"):
        ToolsSettings.load()
