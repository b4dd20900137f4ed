"""The registry's lookups on the call path: the served tool by name, and the schema the SDK checks headers against."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.shared.inbound import validate_mcp_param_headers

from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.gate import GateResult
from saip.gateway.surface.registry import Registry, ServedSet, ServedTool, declares_headers

PLAIN = {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}
ANNOTATED = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
NESTED = {
    "type": "object",
    "properties": {"where": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}},
}


async def _call(*_: Any) -> GateResult:
    return GateResult(text="done")


def _tool(name: str, schema: dict[str, Any]) -> ServedTool:
    return ServedTool(types.Tool(name=name, input_schema=schema), _call)


def _registry() -> Registry:
    registry = Registry(GatewayMetrics())
    registry.replace("management", ServedSet(tools={"plain": _tool("plain", PLAIN), "taken": _tool("taken", PLAIN)}))
    registry.replace(
        "published:tools",
        ServedSet(
            tools={
                "annotated": _tool("annotated", ANNOTATED),
                "nested": _tool("nested", NESTED),
                "taken": _tool("taken", ANNOTATED),
            }
        ),
    )
    return registry


def test_a_tool_is_found_by_name_and_the_first_source_keeps_a_taken_name() -> None:
    registry = _registry()
    assert registry.tool("annotated") is not None
    taken = registry.tool("taken")
    assert taken is not None and taken.definition.input_schema == PLAIN
    assert registry.tool("ghost") is None
    assert [tool.name for tool in registry.tools()] == ["plain", "taken", "annotated", "nested"]


def test_only_a_schema_that_declares_a_header_is_given_to_the_sdk_s_header_check() -> None:
    registry = _registry()
    assert registry.input_schema("annotated") == ANNOTATED
    assert registry.input_schema("nested") == NESTED
    assert registry.input_schema("plain") is None
    assert registry.input_schema("taken") is None  # the served one is the plain schema
    assert registry.input_schema("ghost") is None
    assert declares_headers({"anyOf": [{"properties": {"a": {"x-mcp-header": "A"}}}]})


def test_a_replaced_source_changes_what_is_checked() -> None:
    registry = _registry()
    registry.replace("published:tools", ServedSet(tools={"annotated": _tool("annotated", PLAIN)}))
    assert registry.input_schema("annotated") is None
    assert registry.tool("nested") is None


def test_the_sdk_passes_any_header_against_a_schema_that_declares_none() -> None:
    # Why None is the same answer as the schema for such a tool: the check compares declared headers only. Should the
    # SDK ever check undeclared headers too, this fails, and the registry must hand it every schema again.
    stray = {"mcp-param-region": "elsewhere", "mcp-param-other": "x"}
    assert validate_mcp_param_headers(PLAIN, {"region": "eu"}, stray) is None
    assert validate_mcp_param_headers(ANNOTATED, {"region": "eu"}, stray) is not None
