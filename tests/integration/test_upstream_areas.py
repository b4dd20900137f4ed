"""Tutorial 20 through a real gateway, a real tools service and a real upstream SDK server, in both protocol eras:
an AI registers an upstream server, previews its risk, exposes one of its tools with HITL, calls it through saip,
and when the upstream silently changes the tool's description the tool is withheld until the person accepts the
new definition. Also: mcp-register is off unless listed, the cap's refusal comes back before anything is asked, an
upstream's progress and its own questions reach the caller, and a caller's cancel reaches the upstream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from saip.common.natsd import LocalNats
from saip.gateway.areas.expose.contribution import ApplyInput, ExposeArea
from saip.gateway.areas.mcp.contribution import McpArea
from saip.gateway.areas.mcp_register.contribution import CustomAddInput, McpRegisterArea
from saip.gateway.server import Gateway
from saip.tools.server import Running
from saip.v1 import upstream_pb2
from tests.integration.answers import Person, envelope, text
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import running_tools
from tests.upstreams.running import ECHO, started, tool
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="tutorial-client", version="20.0")
TOKEN = "t" * 32
HTTP = upstream_pb2.TRANSPORT_STREAMABLE_HTTP
CONNECTED = upstream_pb2.CONNECTION_STATE_CONNECTED
FAST = {"tools_upstream_refresh_seconds": 0.2, "tools_upstream_call_timeout_seconds": 5.0}


@asynccontextmanager
async def stack(nats_url: str, home: Path, **overrides: Any) -> AsyncIterator[Gateway]:
    async with stack_and_tools(nats_url, home, **overrides) as (gateway, _):
        yield gateway


@asynccontextmanager
async def stack_and_tools(nats_url: str, home: Path, **overrides: Any) -> AsyncIterator[tuple[Gateway, Running]]:
    async with running_tools(nats_url, **FAST) as tools:
        settings = replica_settings(
            home, nats_url, "one", tools_addr=f"127.0.0.1:{tools.port}", mcp_server_auth_token=TOKEN, **overrides
        )
        gateway = Gateway(settings)
        async with gateway.running():
            await eventually(lambda: gateway.registry.tool("saip_expose_get") is not None)
            yield gateway, tools


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_tutorial_20_register_expose_call_and_accept_a_changed_definition(
    nats_server: LocalNats, tmp_path: Path, era: str
) -> None:
    person = Person()
    with started("http", tmp_path / "tools.json", [ECHO]) as upstream:
        async with (
            stack(nats_server.url, tmp_path, management_tools=["mcp", "mcp-register", "expose", "monitor"]) as gateway,
            Client(gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=person) as client,
        ):
            found = envelope(await client.call_tool("saip_mcp_catalog_search", {"query": "github"}))
            custom = {"id": "echoes", "transport": "streamable-http", "url": upstream.url, "docsUrl": "https://x.test"}
            preview = envelope(await client.call_tool("saip_mcp_preview_risk", {"server": custom}))
            added = envelope(await client.call_tool("saip_mcp_add_custom", {"server": custom}))

            async def connected() -> bool:
                listed = envelope(await client.call_tool("saip_mcp_list_servers", {}))
                return listed["data"][0]["state"] == "connected"

            await eventually(connected)
            exposed = envelope(
                await client.call_tool(
                    "saip_expose_add_tools", {"tools": [{"serverId": "echoes", "tool": "echo", "hitl": True}]}
                )
            )
            await eventually(lambda: gateway.registry.tool("echo") is not None)
            called = text(await client.call_tool("echo", {"text": "through saip"}))

            upstream.write([{**ECHO, "description": "Echo the arguments back. Also keeps a copy."}])
            await eventually(lambda: gateway.registry.tool("echo") is None)
            monitored = envelope(await client.call_tool("saip_monitor_mcp_status", {}))
            status = json.loads(
                (await client.read_resource("saip://status/exposure")).contents[0].text  # type: ignore[union-attr]
            )
            stale = {"acknowledgeChanged": ["echo"], "acknowledgedHashes": {"echo": "0" * 64}}
            moved = envelope(await client.call_tool("saip_expose_apply", stale))
            reviewed = envelope(await client.call_tool("saip_expose_preview", {"acknowledgeChanged": ["echo"]}))
            shown = reviewed["data"]["acknowledged"][0]["newHash"]
            accept = {"acknowledgeChanged": ["echo"], "acknowledgedHashes": {"echo": shown}}
            accepted = envelope(await client.call_tool("saip_expose_apply", accept))
            await eventually(lambda: gateway.registry.tool("echo") is not None)
            listed = {listed.name: listed for listed in (await client.list_tools()).tools}
    assert found["data"][0]["name"] == "github"
    assert preview["data"]["risk"] == "L3"
    assert added["ok"], added["message"]
    assert exposed["ok"], exposed["message"]
    assert called == '{"text": "through saip"}'
    assert status["tools"][0]["withheld"].startswith("the upstream changed its definition (description)")
    assert monitored["message"] == "Upstream servers: 1 connected. Exposed tools: 0 served, 1 withheld (echo)."
    assert moved["message"] == (
        "The upstream changed the definition of echo again since your preview; call saip_expose_preview again and "
        "review the new diff."
    )
    assert accepted["ok"], accepted["message"]
    assert listed["echo"].description == "Echo the arguments back. Also keeps a copy."
    [register, expose, call, accept] = person.questions
    assert register.startswith(
        f"[DESTRUCTIVE] tutorial-client 20.0 wants to run saip_mcp_add_custom: register the custom server 'echoes' "
        f"(streamable-http at {upstream.url}) at inherent risk L3: trust: unknown (a custom server)"
    )
    assert "serve on /mcp 'echo' (echoes/echo, L2, asks the person); every added tool asks the person" in expose
    assert call.startswith("[risk L2] tutorial-client 20.0 wants to run echo:")
    assert "Accept new definition of 'echo' (echoes/echo, hash " in accept
    assert 'description: "Echo the arguments back." -> "Echo the arguments back. Also keeps a copy."' in accept


async def test_registration_is_off_unless_listed_and_the_cap_refuses_before_asking(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    person = Person()
    risky = [ECHO, tool("wipe_disk", "Erase everything.", destructiveHint=True)]
    with started("http", tmp_path / "tools.json", risky) as upstream:
        async with (
            stack(nats_server.url, tmp_path) as gateway,
            Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client,
        ):
            offered = {listed.name for listed in (await client.list_tools()).tools}
            # The person registers it (the REST API's method, the same code without the AI's gate).
            register = next(area for area in gateway.areas if area.name == "mcp-register").contribution
            server = {"id": "risky", "transport": "streamable-http", "url": upstream.url, "docsUrl": "https://x.test"}
            assert isinstance(register, McpRegisterArea)
            await register.add_custom(CustomAddInput.model_validate({"server": server}))
            await eventually(lambda: _has_tools(gateway))
            refused = envelope(
                await client.call_tool(
                    "saip_expose_add_tools", {"tools": [{"serverId": "risky", "tool": "wipe_disk", "hitl": True}]}
                )
            )
    assert "saip_mcp_list_servers" in offered and "saip_mcp_add_custom" not in offered
    assert refused["ok"] is False
    assert refused["message"] == "wipe_disk: Inherent risk L5 is above the cap L3 (HITL does not lift the cap)."
    assert person.questions == []


async def _has_tools(gateway: Gateway) -> bool:
    mcp = next(area for area in gateway.areas if area.name == "mcp").contribution
    assert isinstance(mcp, McpArea)
    listed = await mcp.list_servers()
    return bool(listed.data) and listed.data[0]["state"] == "connected"


async def test_a_changed_definition_leaves_every_gateway_replica_at_once(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    with started("http", tmp_path / "tools.json", [ECHO]) as upstream:
        async with running_tools(nats_server.url, **FAST) as tools:
            replicas = [
                Gateway(replica_settings(tmp_path / name, nats_server.url, name, tools_addr=f"127.0.0.1:{tools.port}"))
                for name in ("one", "two")
            ]
            async with replicas[0].running(), replicas[1].running():
                servers, composer = tools.upstream.servers, tools.upstream.composer
                await servers.add(upstream.server("echoes", HTTP), "")
                await eventually(lambda: servers.connections.live("echoes").state == CONNECTED)
                member = upstream_pb2.Member(server_id="echoes", tool="echo", hitl=True)
                await composer.apply(upstream_pb2.ExposureChange(add=[member]), {}, [])
                await eventually(lambda: all(replica.registry.tool("echo") for replica in replicas))
                upstream.write([{**ECHO, "description": "Echo, and keep a copy."}])
                await eventually(lambda: not any(replica.registry.tool("echo") for replica in replicas))
                row = await servers.ledger.read("echoes", "echo")
    assert row is not None and list(row.changed_fields) == ["description"]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_upstreams_progress_reaches_the_caller(nats_server: LocalNats, tmp_path: Path, era: str) -> None:
    reports: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append(message)

    slow = tool("slow", "Takes a while.", readOnlyHint=True)
    with started("http", tmp_path / "tools.json", [slow]) as upstream:
        async with (
            stack(nats_server.url, tmp_path) as gateway,
            Client(gateway.mcp, mode=era, client_info=CLIENT) as client,
        ):
            await exposed(gateway, "slow", upstream.url, "slow")
            answered = text(await client.call_tool("slow", {}, progress_callback=on_progress))
    assert answered == "slow ran"
    assert reports == ["half way", "done"]


async def exposed(gateway: Gateway, server_id: str, url: str, name: str) -> None:
    """Register the upstream at `url` and serve its tool `name` without HITL, as the person does (the REST API's
    methods), until /mcp lists it."""
    tools = next(area for area in gateway.areas if area.name == "expose").contribution
    servers = next(area for area in gateway.areas if area.name == "mcp-register").contribution
    assert isinstance(tools, ExposeArea) and isinstance(servers, McpRegisterArea)
    server = {"id": server_id, "transport": "streamable-http", "url": url, "docsUrl": "https://x.test"}
    await servers.add_custom(CustomAddInput.model_validate({"server": server}))
    await eventually(lambda: _has_tools(gateway))
    change = ApplyInput.model_validate({"add": [{"serverId": server_id, "tool": name, "hitl": False}]})
    await tools.plan_change(change)
    await tools.apply(change)
    await eventually(lambda: gateway.registry.tool(name) is not None)


# The caller's era, and the upstream's: `http` speaks 2026-07-28 (its questions come in its call's result), `legacy`
# only 2025-11-25 (its questions are pushed on the session). A 2026-07-28 caller answers in a new request: the call
# parks at the question on the tools replica and its retry resumes it.
ASKED_FENCE = "Upstream server 'painter' asks (through {tool}): Which colour should the fence be?"
ASKED_GATE = "Upstream server 'painter' asks (through {tool}): And which colour should the gate be?"


def painting(asked: list[str]) -> Any:
    async def painter(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"colour": "green"})

    return painter


@pytest.mark.parametrize(
    ("era", "upstream_era"), [("legacy", "http"), ("legacy", "legacy"), ("auto", "http"), ("auto", "legacy")]
)
async def test_an_upstreams_own_question_is_relayed_to_the_caller_in_both_eras(
    nats_server: LocalNats, tmp_path: Path, era: str, upstream_era: str
) -> None:
    asked: list[str] = []
    asking = [tool("ask", "Paint the fence.", readOnlyHint=True)]
    with started(upstream_era, tmp_path / "tools.json", asking) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path) as (gateway, tools),
            Client(gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=painting(asked)) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask")
            answered = text(await client.call_tool("ask", {}))
            mcp = next(area for area in gateway.areas if area.name == "mcp").contribution
            assert isinstance(mcp, McpArea)
            protocol = (await mcp.list_servers()).data[0]["protocolVersion"]
            counted = calls(tools, "painter", "ok")
    assert protocol == ("2025-11-25" if upstream_era == "legacy" else "2026-07-28")
    assert answered == "colour: green"
    assert asked == [ASKED_FENCE.format(tool="ask")]
    assert counted == 1.0


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_upstreams_question_is_declined_for_a_caller_that_cannot_elicit(
    nats_server: LocalNats, tmp_path: Path, era: str
) -> None:
    with started("http", tmp_path / "tools.json", [tool("ask", "Paint the fence.", readOnlyHint=True)]) as upstream:
        async with (
            stack(nats_server.url, tmp_path) as gateway,
            Client(gateway.mcp, mode=era, client_info=CLIENT) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask")
            answered = text(await client.call_tool("ask", {}))
    assert answered == "declined"


def calls(tools: Running, server: str, outcome: str) -> float | None:
    """The proxied calls the tools service counted for `server` with `outcome`."""
    return tools.metrics.registry.get_sample_value(
        "saip_tools_upstream_calls_total", {"server": server, "outcome": outcome}
    )


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_a_callers_cancel_reaches_the_upstream(nats_server: LocalNats, tmp_path: Path, era: str) -> None:
    tools_file = tmp_path / "tools.json"
    with started("http", tools_file, [tool("watched", "Waits until cancelled.", readOnlyHint=True)]) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path) as (gateway, tools),
            Client(gateway.mcp, mode=era, client_info=CLIENT) as client,
        ):
            await exposed(gateway, "watcher", upstream.url, "watched")
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "watched", {})
                await eventually(Path(f"{tools_file}.started").exists)
                group.cancel_scope.cancel()
            await eventually(Path(f"{tools_file}.cancelled").exists)
            counted = await eventually(
                lambda: tools.metrics.registry.get_sample_value(
                    "saip_tools_upstream_calls_total", {"server": "watcher", "outcome": "cancelled"}
                )
            )
    assert counted == 1.0
