"""A refusal that quotes the caller's input never carries a secret the input held: the services' refusals, the
gateway's own, the question put to the person and the REST API's errors pass the audit trail's masking
(`saip.common.masking`), through a real gateway over real tools and knowledge services on a real NATS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from tests.integration.answers import Person, envelope
from tests.integration.gateways import serving
from tests.integration.knowledge_support import knowledge_settings, running_knowledge
from tests.integration.tools_support import running_tools
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="masking-client", version="1.0")
PASSWORD = "hunter2-do-not-echo"
BEARER = "sk-live-51Habcdefghijklmnop"


@asynccontextmanager
async def stack(nats_url: str, home: Path, **overrides: Any) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient]]:
    async with AsyncExitStack() as opened:
        tools = await opened.enter_async_context(running_tools(nats_url))
        knowledge = await opened.enter_async_context(running_knowledge(knowledge_settings(home / "k", nats_url)))
        addresses = {"tools_addr": f"127.0.0.1:{tools.port}", "knowledge_addr": f"127.0.0.1:{knowledge.port}"}
        gateway, api, _ = await serving(opened, home, nats_url, **addresses, **overrides)
        await eventually(lambda: gateway.registry.tool("saip_knowledge_apply_pipeline") is not None)
        yield gateway, api


async def test_a_tool_name_that_holds_a_password_is_not_echoed(nats_server: LocalNats, tmp_path: Path) -> None:
    name = f"password={PASSWORD}"
    async with (
        stack(nats_server.url, tmp_path) as (gateway, api),
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        got = envelope(await client.call_tool("saip_tools_get", {"name": name}))
        rest = (await api.get(f"/api/v1/tools/{name}")).json()
    assert not got["ok"] and got["message"].startswith("No tool named 'password=***'")
    assert not rest["ok"] and rest["message"] == got["message"]


async def test_a_pipeline_that_names_a_bearer_token_is_not_echoed_nor_asked_about(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    arguments = {"name": f"Authorization: Bearer {BEARER}", "documents": [f"token={BEARER}"]}
    person = Person()
    async with (
        stack(nats_server.url, tmp_path, management_approval="all") as (gateway, api),
        Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client,
    ):
        applied = envelope(await client.call_tool("saip_knowledge_apply_pipeline", arguments))
        rest = (await api.put(f"/api/v1/knowledge/pipelines/{arguments['name']}", json={"documents": []})).json()
    assert BEARER not in applied["message"] and BEARER not in rest["message"], (applied, rest)
    assert person.questions and all(BEARER not in question for question in person.questions)
    assert "Bearer ***" in person.questions[0]


async def test_an_unknown_tool_on_mcp_and_an_unknown_rest_path_are_said_masked(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path) as (gateway, api),
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        with pytest.raises(MCPError) as unknown:
            await client.call_tool(f"api_key={PASSWORD}", {})
        missing = (await api.get(f"/api/v1/secret={PASSWORD}")).json()
    assert PASSWORD not in str(unknown.value) and "api_key=***" in str(unknown.value)
    assert PASSWORD not in missing["message"] and "secret=***" in missing["message"]
