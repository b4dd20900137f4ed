"""The JSON shapes of Tool Studio's data, the same for the saip_tools_* tools (the AI) and the REST API (the person).

The views are declared parallel tables: one function per message, each a dict of the same shape."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from saip.common import jsondepth
from saip.common.words import when
from saip.v1 import tools_pb2

STATES = {
    tools_pb2.TOOL_STATE_DRAFT: "draft",
    tools_pb2.TOOL_STATE_PUBLISHED: "published",
    tools_pb2.TOOL_STATE_MISSING_REQUIREMENTS: "missing-requirements",
}
SOURCES = {
    tools_pb2.TOOL_SOURCE_AUTHORED: "authored",
    tools_pb2.TOOL_SOURCE_BUNDLED: "bundled",
    tools_pb2.TOOL_SOURCE_CONFIGURATION: "configuration",
}


def summary(tool: tools_pb2.ToolSummary) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "state": STATES.get(tool.state, "unknown"),
        "source": SOURCES.get(tool.source, "unknown"),
        "risk": f"L{tool.risk_level}",
        "network": {"mode": tool.network_mode, "hosts": list(tool.hosts_allow)},
        "asksPerson": tool.hitl_required,
        "servedOnMcp": tool.exposed,
        "tested": tool.tested,
        "missingEnv": list(tool.missing_env),
        "revision": tool.revision,
        "createdAt": when(tool.created_at),
        "updatedAt": when(tool.updated_at),
    }
    if tool.configuration_key:
        view["configurationKey"] = tool.configuration_key
    return view


def detail(found: tools_pb2.ToolDetail) -> dict[str, Any]:
    last = found.last_test
    return {
        **summary(found.summary),
        "spec": json.loads(found.spec_json),
        "lastTest": {"passed": last.passed, "at": when(last.at), "error": last.error or None}
        if last.spec_sha256
        else None,
        "poisoningHits": list(found.poisoning_hits),
    }


def risk(report: tools_pb2.RiskReport) -> dict[str, Any]:
    return {
        "name": report.name,
        "risk": f"L{report.risk_level}",
        "reasons": list(report.reasons),
        "network": {"mode": report.network_mode, "hosts": list(report.hosts_allow)},
        "asksPerson": report.hitl_required,
        "aboveBaseline": report.above_baseline,
        "weakensApproval": report.weakens_approval,
        "poisoningHits": list(report.poisoning_hits),
        "state": STATES.get(report.state),
        "tested": report.tested,
    }


def test(report: tools_pb2.TestReport) -> dict[str, Any]:
    try:
        result: Any = jsondepth.loads(report.result_json) if report.result_json else None
    except jsondepth.TooDeep:
        result = report.result_json  # the text as the tool returned it: too deep to read as data
    return {
        "name": report.name,
        "passed": report.passed,
        "localPass": report.local_pass,
        "published": report.published,
        "result": result,
        "error": report.error or None,
        "console": list(report.console),
        "durationMs": report.duration_ms,
        "guardBlocks": [{"reason": block.reason, "message": block.message} for block in report.guard_blocks],
    }


def exposure(setting: tools_pb2.Exposure) -> dict[str, Any]:
    return {"autoExpose": setting.auto_expose, "tools": list(setting.tools), "revision": setting.revision}


def network_words(mode: str, hosts: Sequence[str]) -> str:
    return f"network {mode}" + (f" ({', '.join(hosts)})" if hosts else "")
