"""Bad input to the management tools, through a real gateway over real tools, knowledge and shipyard services on a real
NATS: each call is refused with a sentence that says what to do instead (never gRPC's own words, never "not
reachable"), quotes no secret in any case, stays small, and leaves nothing stored."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from tests.integration.gateways import replica_settings
from tests.integration.knowledge_support import knowledge_settings, running_knowledge
from tests.integration.shipyard_support import running_shipyard
from tests.integration.tools_support import running_tools
from tests.results import envelope
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="bad-input-client", version="1.0")
BEARER = "sk-live-51Habcdefghijklmnopq"
LONG = "a" * 100_000


def param(name: str) -> dict[str, Any]:
    return {"name": name, "description": "d", "type": "string", "required": True, "testValue": "x"}


# (tool, arguments, what the refusal says): each a call that once answered with gRPC's "Stream removed (received
# metadata size exceeds hard limit ...)", "not reachable", a 100 KB echo, or the secret it was given.
CASES = [
    ("saip_tools_save_draft", {"spec": document("t1", params=[param(LONG)])}, "is not a JavaScript identifier"),
    ("saip_tools_test", {"name": "adder", "arguments": {"a": LONG, "b": 1}}, "(100000 characters)' is not of type"),
    ("saip_tools_set_exposure", {"autoExpose": True, "tools": [LONG]}, "at most 64 characters"),
    ("saip_knowledge_apply_pipeline", {"name": "p1", "documents": [LONG]}, "at most 200 characters"),
    ("saip_shipyard_validate", {"name": "ops", "description": "Does ops.", "tools": [LONG]}, "at most 64 characters"),
    ("saip_expose_remove_tools", {"names": [LONG]}, "at most 64 characters"),
    (
        "saip_tools_save_draft",
        {"spec": document("t2", sandbox={"networkMode": "allowlist", "hostsAllow": [LONG]})},
        "is not a host name (253 characters at most)",
    ),
    (
        "saip_tools_save_draft",
        {"spec": document("t3", sandbox={"networkMode": "allowlist", "hostsAllow": [f"Bearer {BEARER}"]})},
        "hostsAllow entry 'bearer ***' is not a host name",
    ),
]


@asynccontextmanager
async def stack(nats_url: str, home: Path) -> AsyncIterator[Gateway]:
    async with AsyncExitStack() as opened:
        tools = await opened.enter_async_context(running_tools(nats_url))
        knowledge = await opened.enter_async_context(running_knowledge(knowledge_settings(home / "k", nats_url)))
        shipyard = await opened.enter_async_context(running_shipyard(home / "s", nats_url, tools.port, knowledge.port))
        settings = replica_settings(
            home,
            nats_url,
            "one",
            tools_addr=f"127.0.0.1:{tools.port}",
            knowledge_addr=f"127.0.0.1:{knowledge.port}",
            shipyard_addr=f"127.0.0.1:{shipyard.port}",
            mcp_server_auth_token="t" * 24,
            management_approval="none",
        )
        gateway = Gateway(settings)
        await opened.enter_async_context(gateway.running())
        await eventually(lambda: all(gateway.registry.tool(name) is not None for name, _, _ in CASES))
        yield gateway


async def test_bad_input_is_refused_with_a_small_clear_sentence_and_stores_nothing(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with stack(nats_server.url, tmp_path) as gateway, Client(gateway.mcp, client_info=CLIENT) as client:
        await client.call_tool("saip_tools_save_draft", {"spec": document("adder")})
        answers = [(tool, said, envelope(await client.call_tool(tool, arguments))) for tool, arguments, said in CASES]
        listed = envelope(await client.call_tool("saip_tools_list", {}))
        exposure = envelope(await client.call_tool("saip_tools_get_exposure", {}))
        pipelines = envelope(await client.call_tool("saip_knowledge_list_pipelines", {}))

    for tool, said, answer in answers:
        message = answer["message"]
        assert not answer["ok"] and said in message, (tool, message[:300])
        assert "Stream removed" not in message and "not reachable" not in message, (tool, message[:300])
        assert BEARER.lower() not in message.lower() and len(json.dumps(answer)) < 2000, (tool, message[:300])
    assert [tool["name"] for tool in listed["data"]] == ["adder"]
    assert exposure["data"]["tools"] == [] and pipelines["data"]["pipelines"] == []
