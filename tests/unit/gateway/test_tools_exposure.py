"""Exposing a tool at L4 or above is a high-risk action: the tools area's plan reads each listed tool's risk, so the
call always asks, and is refused when approval is off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client

from saip.gateway.areas.tools.contribution import ToolsArea
from saip.gateway.config import ApprovalMode
from saip.gateway.errors import ServiceRefused
from saip.v1 import tools_pb2
from tests.unit.gateway.probe import harness


class RiskyTools:
    """The tools service as the exposure plan reads it (a hand-written fake of its client): each tool's risk, and
    the exposure it was set to."""

    def __init__(self, levels: dict[str, int]) -> None:
        self.levels = levels
        self.set: list[list[str]] = []

    async def check_risk(self, *, name: str = "", spec: dict[str, Any] | None = None) -> tools_pb2.RiskReport:
        if name not in self.levels:
            raise ServiceRefused(f"No tool '{name}'. List them with saip_tools_list.")
        return tools_pb2.RiskReport(name=name, risk_level=self.levels[name])

    async def set_exposure(
        self,
        auto_expose: bool,
        tools: list[str],
        expected_revision: int = 0,
        expected_tools: dict[str, int] | None = None,
    ) -> tools_pb2.Exposure:
        self.set.append(tools)
        return tools_pb2.Exposure(auto_expose=auto_expose, tools=tools, revision=2)


def message(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and result.structured_content is not None
    return str(result.structured_content["message"])


async def test_exposing_a_tool_at_l4_is_refused_when_approval_is_off(tmp_path: Path) -> None:
    service = RiskyTools({"shell": 4, "stats": 1})
    h = harness(tmp_path, mode=ApprovalMode.NONE, others=[ToolsArea(service, set)])  # type: ignore[arg-type]
    await h.registrar.refresh()
    async with Client(h.server) as client:
        refused = await client.call_tool("saip_tools_set_exposure", {"autoExpose": False, "tools": ["stats", "shell"]})
        allowed = await client.call_tool("saip_tools_set_exposure", {"autoExpose": False, "tools": ["stats"]})
    assert message(refused) == (
        "Tool 'saip_tools_set_exposure' was not run: this is a high-risk action and needs a human decision, but "
        "approval is disabled (management.approval=none). Ask the user to run it from the app."
    )
    assert message(allowed) == "Exposure saved: serve published tools only when listed; also serve stats."
    assert service.set == [["stats"]]
    refused_record, allowed_record = h.audit.records
    assert refused_record.high_risk and not allowed_record.high_risk
    assert refused_record.summary == (
        "serve published tools only when listed; also serve stats, shell; serves 'shell' (L4) at risk L4 or above"
    )


async def test_exposing_a_tool_at_l4_is_high_risk_and_the_summary_names_it() -> None:
    area = ToolsArea(RiskyTools({"shell": 5}), set)  # type: ignore[arg-type]
    [expose] = [tool for tool in area.tools() if tool.name == "saip_tools_set_exposure"]
    approval = await expose.approval_for(expose.bind({"autoExpose": True, "tools": ["shell", "shell"]}))
    assert approval.high_risk
    assert approval.summary == (
        "serve every newly published tool; also serve shell, shell; serves 'shell' (L5) at risk L4 or above"
    )


async def test_an_unknown_listed_tool_is_refused_by_the_service_before_any_question(tmp_path: Path) -> None:
    h = harness(tmp_path, others=[ToolsArea(RiskyTools({}), set)])  # type: ignore[arg-type]
    await h.registrar.refresh()
    async with Client(h.server) as client:
        result = await client.call_tool("saip_tools_set_exposure", {"autoExpose": False, "tools": ["ghost"]})
    assert message(result) == "No tool 'ghost'. List them with saip_tools_list."
