"""Tutorial 20 end to end, started as `make run` starts it, through a real MCP client over HTTP in both protocol
eras: an AI registers an upstream MCP server, previews its risk, exposes one of its tools with HITL, calls it
through saip (the call on the audit trail as a proxied call), and when the upstream silently changes the tool's
description the tool is withheld until the person accepts the new definition. An upstream's own questions reach
the caller and its answers go back, in both eras, also when the call is a chat turn's (the scripted model of
tests/model_server.py). And saip refuses its own /mcp as an upstream by its handshake, whatever address points at
it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.stack import ChatStack, Stack, chat_stack, mcp_client
from tests.e2e.test_spine import cli
from tests.integration.answers import Painter, Person
from tests.model_server import call, say
from tests.results import envelope, text
from tests.upstreams.running import ECHO, started, tool
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
TOKEN = "e2e-upstream-token-" + "x" * 24
CHANGED = "Echo the arguments back. Also keeps a copy."


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatStack]:
    """A stack whose AI may register servers and ask the chat (its model scripted by each test), whose tools service
    lists upstreams often, and whose MCP token the tools service can also read (to try to register saip's own /mcp
    with it)."""
    env = {
        "SAIP_MANAGEMENT_TOOLS": "mcp,mcp-register,expose,monitor,chat",
        "SAIP_MCP_SERVER_AUTH_TOKEN": TOKEN,
        "E2E_GATEWAY_TOKEN": TOKEN,
        "SAIP_TOOLS_UPSTREAM_VARIABLES": "E2E_GATEWAY_TOKEN",
        "SAIP_TOOLS_UPSTREAM_REFRESH_SECONDS": "0.5",
    }
    with chat_stack(tmp_path_factory.mktemp("saip-home"), env) as running:
        yield running


@pytest.fixture(scope="module")
def stack(chat: ChatStack) -> Stack:
    return chat.stack


async def names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", ERAS)
async def test_tutorial_20_register_preview_expose_call_and_accept_a_changed_definition(
    stack: Stack, mode: str, tmp_path: Path
) -> None:
    era = "legacy" if mode == "legacy" else "modern"
    alias = f"echo_{era}"
    person = Person()
    # Each era has its own upstream process, so the rug pull of one does not touch the other.
    with started("http", tmp_path / "tools.json", [ECHO]) as own:
        custom = {"id": f"echoes-{era}", "transport": "streamable-http", "url": own.url, "docsUrl": "https://x.test"}
        async with mcp_client(stack.mcp_url, stack.mcp_token, mode=mode, elicitation_callback=person) as client:
            guide = await client.read_resource("saip://guide/proxy")
            preview = envelope(await client.call_tool("saip_mcp_preview_risk", {"server": custom}))
            added = envelope(await client.call_tool("saip_mcp_add_custom", {"server": custom}))

            await eventually(lambda: _connected(client, custom["id"]), within=30)
            shown = cli(stack, "servers", "tools", custom["id"])
            member = {"serverId": custom["id"], "tool": "echo", "alias": alias, "hitl": True}
            exposed = envelope(await client.call_tool("saip_expose_add_tools", {"tools": [member]}))
            await eventually(lambda: _serves(client, alias), within=30)
            called = text(await client.call_tool(alias, {"text": f"through saip, {era}"}))

            own.write([{**ECHO, "description": CHANGED}])
            await eventually(lambda: _serves(client, alias, expected=False), within=30)
            withheld = envelope(await client.call_tool("saip_expose_get", {}))
            accepted = envelope(await client.call_tool("saip_expose_apply", {"acknowledgeChanged": [alias]}))
            await eventually(lambda: _serves(client, alias), within=30)
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            audited = await eventually(lambda: _proxied(client, alias), within=30)
    assert "Accept new definition" in guide.contents[0].text  # type: ignore[union-attr]
    assert preview["data"]["risk"] == "L3"
    # The person sees what raised each tool's level, and so what would bring it under the cap.
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[1] == "    tool read-only, closed-world; server trust: unknown (a custom server)"
    assert added["ok"] and exposed["ok"], (added["message"], exposed["message"])
    assert called == f'{{"text": "through saip, {era}"}}'
    [entry] = [tool for tool in withheld["data"]["tools"] if tool["name"] == alias]
    assert (entry["served"], entry["fingerprint"]) == (False, "awaiting-rereview")
    assert accepted["ok"], accepted["message"]
    assert listed[alias].description == CHANGED
    assert audited["source"] == "exposed" and audited["proxied"] == {"server": custom["id"], "tool": "echo"}
    assert audited["approval"] == "approved"
    [register, expose, call, accept] = person.questions
    assert f"register the custom server '{custom['id']}' (streamable-http at {own.url})" in register
    assert "every added tool asks the person" in expose
    assert call.startswith("[risk L2] e2e-client") and f"wants to run {alias}:" in call
    assert f"Accept new definition of '{alias}'" in accept and CHANGED in accept


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstreams_own_questions_reach_the_caller_and_its_answers_go_back(
    stack: Stack, mode: str, tmp_path: Path
) -> None:
    """A 2025-11-25 caller is asked on its back channel; a 2026-07-28 caller gets each question as an input request
    and answers it in a new request, which resumes the call parked at the question on the tools service."""
    era = "legacy" if mode == "legacy" else "modern"
    alias, server_id = f"paint_{era}", f"painter-{era}"
    person = Painter()
    with started("http", tmp_path / "tools.json", [tool("ask_twice", "Paint the fence and the gate.")]) as own:
        custom = {"id": server_id, "transport": "streamable-http", "url": own.url, "docsUrl": "https://x.test"}
        async with mcp_client(stack.mcp_url, stack.mcp_token, mode=mode, elicitation_callback=person) as client:
            added = envelope(await client.call_tool("saip_mcp_add_custom", {"server": custom}))
            await eventually(lambda: _connected(client, server_id), within=30)
            member = {"serverId": server_id, "tool": "ask_twice", "alias": alias, "hitl": True}
            exposed = envelope(await client.call_tool("saip_expose_add_tools", {"tools": [member]}))
            await eventually(lambda: _serves(client, alias), within=30)
            called = text(await client.call_tool(alias, {"text": "fence and gate"}))
            audited = await eventually(lambda: _proxied(client, alias), within=30)
    assert added["ok"] and exposed["ok"], (added["message"], exposed["message"])
    assert called == "fence: green, gate: green"
    asked = person.questions
    assert asked[-2:] == [
        f"Upstream server '{server_id}' asks (through {alias}): Which colour should the fence be?",
        f"Upstream server '{server_id}' asks (through {alias}): And which colour should the gate be?",
    ]
    assert f"wants to run {alias}:" in asked[-3]
    assert audited["proxied"] == {"server": server_id, "tool": "ask_twice"}
    assert (audited["outcome"], audited["approval"]) == ("OK", "approved")


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstreams_own_questions_inside_a_chat_turn_reach_the_client_that_started_it(
    chat: ChatStack, mode: str, tmp_path: Path
) -> None:
    """The chat's model calls the exposed tool: saip's HITL question, then the upstream's two, reach the AI's client
    (a 2026-07-28 turn stops at each and resumes the parked call on the retry), and the turn answers from the
    tool's result."""
    era = "legacy" if mode == "legacy" else "modern"
    alias, server_id = f"chat_paint_{era}", f"chat-painter-{era}"
    person = Painter()
    seen = len(chat.model.requests)
    chat.model.steps.extend([call(alias, {"text": "fence and gate"}), say("Both are green.")])
    with started("http", tmp_path / "tools.json", [tool("ask_twice", "Paint the fence and the gate.")]) as own:
        custom = {"id": server_id, "transport": "streamable-http", "url": own.url, "docsUrl": "https://x.test"}
        async with mcp_client(chat.stack.mcp_url, chat.stack.mcp_token, mode=mode, elicitation_callback=person) as ai:
            await ai.call_tool("saip_mcp_add_custom", {"server": custom})
            await eventually(lambda: _connected(ai, server_id), within=30)
            member = {"serverId": server_id, "tool": "ask_twice", "alias": alias, "hitl": True}
            exposed = envelope(await ai.call_tool("saip_expose_add_tools", {"tools": [member]}))
            await eventually(lambda: _serves(ai, alias), within=30)
            asked = envelope(await ai.call_tool("saip_chat_ask", {"prompt": "Paint both", "tools": [alias]}))
            audited = await eventually(lambda: _proxied(ai, alias), within=30)
    assert exposed["ok"], exposed["message"]
    assert asked["ok"], asked["message"]
    assert (asked["data"]["answer"], asked["data"]["toolCalls"]) == (
        "Both are green.",
        [{"name": alias, "outcome": "ran"}],
    )
    assert chat.model.tool_results(seen + 1) == ["fence: green, gate: green"]
    assert person.questions[-3:] == [
        f"[risk L2] Chat turn started by this client wants to run a tool. Run '{alias}' with "
        '{"text": "fence and gate"}?',
        f"Upstream server '{server_id}' asks (through {alias}): Which colour should the fence be?",
        f"Upstream server '{server_id}' asks (through {alias}): And which colour should the gate be?",
    ]
    assert audited["proxied"] == {"server": server_id, "tool": "ask_twice"}
    assert (audited["outcome"], audited["approval"]) == ("OK", "approved")


async def _serves(client: Any, name: str, *, expected: bool = True) -> bool:
    return (name in await names(client)) is expected


async def _connected(client: Any, server_id: str) -> bool:
    tools = envelope(await client.call_tool("saip_mcp_server_tools", {"serverId": server_id}))
    return bool(tools["data"]["server"]["state"] == "connected")


async def _proxied(client: Any, alias: str) -> dict[str, Any] | None:
    """The newest audited call of `alias`, as saip_monitor_proxied_calls shows it."""
    page = envelope(await client.call_tool("saip_monitor_proxied_calls", {"tool": alias}))
    return page["data"]["entries"][0] if page["data"]["entries"] else None


async def test_saip_refuses_its_own_mcp_by_url_at_every_form_of_the_address_it_listens_on(stack: Stack) -> None:
    # The stack's gateway is not on 8282 (a free port): the launcher tells the tools service where it listens. No
    # token is sent, so no handshake could tell: the URL alone is refused, before anything is stored.
    port = urlsplit(stack.mcp_url).port
    person = Person()
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy", elicitation_callback=person) as client:
        for number, host in enumerate(["127.0.0.1", "0.0.0.0", "[::]", "localhost"]):
            server = {"id": f"self{number}", "transport": "streamable-http", "url": f"http://{host}:{port}/mcp"}
            refused = envelope(
                await client.call_tool("saip_mcp_add_custom", {"server": {**server, "docsUrl": "https://x.test"}})
            )
            assert (refused["ok"], refused["message"]) == (
                False,
                f"Server 'self{number}' is saip's own /mcp, which cannot be its own upstream; register the upstream "
                "server's URL instead.",
            ), host
        listed = envelope(await client.call_tool("saip_mcp_list_servers", {}))
    assert not [found["id"] for found in listed["data"] if found["id"].startswith("self")]


async def test_saip_refuses_its_own_mcp_by_handshake_at_another_address(stack: Stack) -> None:
    person = Person()
    # localhost, not 127.0.0.1, and the stack's own port: no configured URL matches; the handshake does.
    url = stack.mcp_url.replace("127.0.0.1", "localhost")
    server = {
        "id": "myself",
        "transport": "streamable-http",
        "url": url,
        "headers": {"Authorization": "Bearer ${E2E_GATEWAY_TOKEN}"},
        "docsUrl": "https://x.test",
    }
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy", elicitation_callback=person) as client:
        refused = envelope(await client.call_tool("saip_mcp_add_custom", {"server": server}))
        listed = envelope(await client.call_tool("saip_mcp_list_servers", {}))
    assert refused["ok"] is False
    assert refused["message"] == (
        "Server 'myself' is saip's own /mcp, which cannot be its own upstream; register the upstream server's URL "
        "instead."
    )
    assert "myself" not in [found["id"] for found in listed["data"]]
