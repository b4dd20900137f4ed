"""A literal secret is REFUSED (the seed's table) wherever an argument may be a secret: a tool spec's static
variables and code, a knowledge URL. The refusal comes before anything is asked or run, and the trail records it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.areas.knowledge.contribution import KnowledgeArea
from saip.gateway.areas.tools.contribution import ToolsArea
from saip.gateway.clients import ServiceChannel
from saip.v1 import common_pb2
from tests.unit.gateway.probe import harness


class Untouched:
    """A tools service that must never be reached: every refusal here happens in the gateway first."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the tools service was called ({name}) for a call that holds a literal secret")


def spec(**changes: Any) -> dict[str, Any]:
    return {"name": "leaky", "description": "Fetches the weather.", "code": "return 1;", **changes}


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        (
            "saip_tools_save_draft",
            {"spec": spec(staticVariables={"apiKey": "abc123def456"})},
            "Static variable 'apiKey' looks like a secret",
        ),
        (
            "saip_tools_check_risk",
            {"spec": spec(code="return fetch(u, {headers: {authorization: 'Bearer abcdefgh12345678'}});")},
            "A value written in the code looks like a secret",
        ),
        (
            "saip_knowledge_ingest_document",
            {"url": "https://docs.example.com/page?api_key=abc123def456"},
            "The URL parameter 'api_key' looks like a secret",
        ),
        (
            "saip_knowledge_ingest_document",
            {"url": "https://ann:hunter22@docs.example.com/page"},
            "The password in the URL looks like a secret",
        ),
    ],
)
async def test_a_literal_secret_is_refused_before_anything_runs(
    tmp_path: Path, tool: str, arguments: dict[str, Any], said: str
) -> None:
    # Port 1 has no knowledge service: a call that reached it would fail as unreachable, not as refused.
    channel = ServiceChannel("knowledge", "127.0.0.1:1", deadline=0.5)
    areas = [ToolsArea(Untouched(), set), KnowledgeArea(KnowledgeClient(channel), set)]  # type: ignore[arg-type]
    h = harness(tmp_path, others=areas)
    await h.registrar.refresh()
    try:
        async with Client(h.server) as client:
            result = await client.call_tool(tool, arguments)
    finally:
        await channel.close()
    assert isinstance(result, types.CallToolResult) and result.structured_content is not None
    message = str(result.structured_content["message"])
    assert message.startswith(said)
    assert "secrets never pass through this interface: a literal value is refused. Ask the person to add it" in message
    assert "abc123def456" not in message and "hunter22" not in message
    [record] = h.audit.records
    assert record.outcome == common_pb2.OUTCOME_REFUSED
    assert "abc123def456" not in str(record) and "hunter22" not in str(record)
