"""Every number and every string a management tool takes is bounded in its schema, so an out-of-range one is Invalid
arguments, never an unexpected error from the service request it would have become, nor a refusal that quotes 100 KB
back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from saip.gateway.config import GatewaySettings
from saip.gateway.errors import InvalidArguments
from saip.gateway.server import Gateway
from saip.gateway.surface.management import MAX_INTEGER
from saip.v1 import common_pb2
from tests.unit.gateway.probe import SEALING_KEY, harness

ADMIN = "a" * 40


def every_area() -> Gateway:
    """A gateway (not started) with an address for every service, so every area's tools are there to read."""
    addresses = {f"{name}_addr": "127.0.0.1:1" for name in ("audit", "tools", "knowledge", "shipyard")}
    return Gateway(GatewaySettings.load(admin_token=ADMIN, approval_sealing_key=SEALING_KEY, **addresses))


def typed(schema: Any, where: str, kinds: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema of one of `kinds` inside `schema` (properties, items, a map's values, anyOf, $defs), with where it
    is."""
    if isinstance(schema, dict):
        declared = schema.get("type")  # a property named "type" holds a schema, not a type
        if any(
            isinstance(kind, str) and kind in kinds for kind in (declared if isinstance(declared, list) else [declared])
        ):
            yield where, schema
        for key, value in schema.items():
            yield from typed(value, f"{where}.{key}", kinds)
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from typed(value, f"{where}[{index}]", kinds)


def test_every_integer_and_number_input_of_every_management_tool_is_bounded() -> None:
    tools = [tool for area in every_area().areas for tool in area.contribution.tools()]
    assert len(tools) > 20
    checked = []
    for tool in tools:
        for where, schema in typed(tool.definition().input_schema, tool.name, {"integer", "number"}):
            assert "maximum" in schema and "minimum" in schema, f"{where} has no bounds: {schema}"
            assert schema["maximum"] <= MAX_INTEGER, where
            checked.append(where)
    assert "saip_monitor_management_log.properties.before" in checked


def test_every_string_input_of_every_management_tool_is_bounded() -> None:
    tools = [tool for area in every_area().areas for tool in area.contribution.tools()]
    unbounded = [
        where
        for tool in tools
        for where, schema in typed(tool.definition().input_schema, tool.name, {"string"})
        if "maxLength" not in schema and "enum" not in schema and "format" not in schema
    ]
    assert unbounded == []


async def test_a_page_cursor_beyond_every_integer_is_invalid_arguments_through_the_sdk(tmp_path: Path) -> None:
    monitor = next(area.contribution for area in every_area().areas if area.name == "monitor")
    h = harness(tmp_path, others=[monitor])
    await h.registrar.refresh()
    async with Client(h.server) as client:
        result = await client.call_tool("saip_monitor_management_log", {"before": 2**64})
    assert isinstance(result, types.CallToolResult) and result.is_error
    assert result.structured_content is not None
    message = result.structured_content["message"]
    assert message.startswith("Invalid arguments for 'saip_monitor_management_log': 'before': Input should be less")
    [record] = h.audit.records
    assert record.tool == "saip_monitor_management_log"


@pytest.mark.parametrize("value", [-1, MAX_INTEGER + 1])
def test_a_number_outside_its_bounds_is_refused_when_bound(value: int) -> None:
    [log] = [t for a in every_area().areas for t in a.contribution.tools() if t.name == "saip_monitor_management_log"]
    with pytest.raises(InvalidArguments, match="Invalid arguments for 'saip_monitor_management_log'"):
        log.bind({"before": value})


def nested(levels: int) -> Any:
    value: Any = None
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize("levels", [65, 5000])
def test_arguments_nested_deeper_than_saip_reads_are_invalid_arguments_for_every_tool(levels: int) -> None:
    """The base of every tool's arguments measures the depth first: no validator, no service sees the document."""
    for tool in [t for area in every_area().areas for t in area.contribution.tools()]:
        with pytest.raises(InvalidArguments, match="the JSON is nested more than 64 levels deep") as refused:
            tool.bind({"spec": nested(levels)})
        assert str(refused.value).startswith(f"Invalid arguments for '{tool.name}': ")


async def test_a_deep_spec_is_refused_through_the_sdk_and_recorded(tmp_path: Path) -> None:
    tools = next(area.contribution for area in every_area().areas if area.name == "tools")
    h = harness(tmp_path, others=[tools])
    await h.registrar.refresh()
    async with Client(h.server) as client:
        result = await client.call_tool("saip_tools_save_draft", {"spec": nested(200)})
    assert isinstance(result, types.CallToolResult) and result.is_error
    assert result.structured_content is not None
    assert "the JSON is nested more than 64 levels deep" in result.structured_content["message"]
    [record] = h.audit.records
    assert record.outcome == common_pb2.OUTCOME_REFUSED
