"""Tutorial 20 through a real gateway, a real tools service and a real upstream SDK server, in both protocol eras:
an AI registers an upstream server, previews its risk, exposes one of its tools with HITL, calls it through saip,
and when the upstream silently changes the tool's description the tool is withheld until the person accepts the
new definition. Also: mcp-register is off unless listed, the cap's refusal comes back before anything is asked, an
upstream's progress and its own questions reach the caller (a 2026-07-28 caller's call parks at each question on
the tools replica and its retry resumes it: bound to its sealed state, once, within the wait, within the limit of
parked calls, from any replica), and a caller's cancel reaches the upstream.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import grpc
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from saip.common.approval_form import INPUT_KEY
from saip.common.natsd import LocalNats, free_port
from saip.gateway.areas.expose.contribution import ApplyInput, ExposeArea
from saip.gateway.areas.mcp.contribution import CatalogSearchInput, McpArea, ServerIdInput
from saip.gateway.areas.mcp_register.contribution import CustomAddInput, McpRegisterArea
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import ServiceRefused
from saip.gateway.server import Gateway
from saip.gateway.surface.management import Caller, Deadline
from saip.gateway.surface.served import ServedToolsClient
from saip.tools.server import Running
from saip.v1 import audit_pb2, common_pb2, upstream_pb2, upstream_pb2_grpc
from tests.integration.answers import Painter, Person, Roundtrip
from tests.integration.audit_support import audit_client, running_audit
from tests.integration.exposure_support import exposed, upstream_connected
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import calls, parked_now, running_tools
from tests.results import envelope, text
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
async def stack_and_tools(
    nats_url: str, home: Path, tools_settings: dict[str, Any] | None = None, **overrides: Any
) -> AsyncIterator[tuple[Gateway, Running]]:
    async with running_tools(nats_url, **(FAST | (tools_settings or {}))) as tools:
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
            await eventually(lambda: upstream_connected(gateway))
            refused = envelope(
                await client.call_tool(
                    "saip_expose_add_tools", {"tools": [{"serverId": "risky", "tool": "wipe_disk", "hitl": True}]}
                )
            )
    assert "saip_mcp_list_servers" in offered and "saip_mcp_add_custom" not in offered
    assert refused["ok"] is False
    assert refused["message"] == "wipe_disk: Inherent risk L5 is above the cap L3 (HITL does not lift the cap)."
    assert person.questions == []


async def test_an_exposure_change_with_nothing_in_it_is_refused_before_anyone_is_asked(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    person = Person()
    async with (
        stack(nats_server.url, tmp_path) as gateway,
        Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client,
    ):
        refused = envelope(await client.call_tool("saip_expose_apply", {"expectedRevision": 0}))
        unknown = envelope(
            await client.call_tool(
                "saip_expose_apply", {"remove": ["nothere"], "setHitl": [{"name": "ghost", "hitl": True}]}
            )
        )
        expose = next(area for area in gateway.areas if area.name == "expose").contribution
        assert isinstance(expose, ExposeArea)
        with pytest.raises(ServiceRefused) as by_the_person:
            await expose.apply(ApplyInput())
    assert refused["ok"] is False
    assert refused["message"] == (
        "Nothing to change: give add, remove, setHitl or acknowledgeChanged (saip_expose_preview shows what a change "
        "would do)."
    )
    assert str(by_the_person.value) == refused["message"]
    # A change naming what is not there is refused with one sentence per name, before anyone is asked.
    assert unknown["message"] == (
        "nothere: 'nothere' is not exposed; saip_expose_get lists what is; ghost: 'ghost' is not exposed; add it first."
    )
    assert person.questions == []


async def test_a_servers_tools_are_counted_and_one_that_lists_none_says_why(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    with started("http", tmp_path / "tools.json", [ECHO]) as upstream:
        async with stack(nats_server.url, tmp_path) as gateway:
            register = next(area for area in gateway.areas if area.name == "mcp-register").contribution
            mcp = next(area for area in gateway.areas if area.name == "mcp").contribution
            assert isinstance(register, McpRegisterArea) and isinstance(mcp, McpArea)
            for server_id, url in (("echoes", upstream.url), ("down", f"http://127.0.0.1:{free_port()}/mcp")):
                server = {"id": server_id, "transport": "streamable-http", "url": url, "docsUrl": "https://x.test"}
                await register.add_custom(CustomAddInput.model_validate({"server": server}))

            async def settled() -> bool:
                states = {found["id"]: found["state"] for found in (await mcp.list_servers()).data}
                return states == {"echoes": "connected", "down": "failed"}

            await eventually(settled)
            listed = await mcp.server_tools(ServerIdInput(serverId="echoes"))
            empty = await mcp.server_tools(ServerIdInput(serverId="down"))
            unmatched = await mcp.catalog_search(CatalogSearchInput(query="no such server"))
    assert listed.message == "'echoes' is connected and lists 1 tool: echo (L3)."
    assert empty.message.startswith("'down' is failed (ConnectError: ")
    assert empty.message.endswith(") and lists no tools.")
    assert unmatched.message == (
        "No catalog entry matches 'no such server'; try other words, or an empty query for them all."
    )


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


# The caller's era, and the upstream's: `http` speaks 2026-07-28 (its questions come in its call's result), `legacy`
# only 2025-11-25 (its questions are pushed on the session). A 2026-07-28 caller answers in a new request: the call
# parks at the question on the tools replica and its retry resumes it.
ASKED_FENCE = "Upstream server 'painter' asks (through {tool}): Which colour should the fence be?"
ASKED_GATE = "Upstream server 'painter' asks (through {tool}): And which colour should the gate be?"


@pytest.mark.parametrize(
    ("era", "upstream_era"), [("legacy", "http"), ("legacy", "legacy"), ("auto", "http"), ("auto", "legacy")]
)
async def test_an_upstreams_own_question_is_relayed_to_the_caller_in_both_eras(
    nats_server: LocalNats, tmp_path: Path, era: str, upstream_era: str
) -> None:
    painter = Painter()
    asking = [tool("ask", "Paint the fence.", readOnlyHint=True)]
    with started(upstream_era, tmp_path / "tools.json", asking) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path) as (gateway, tools),
            Client(gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=painter) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask")
            answered = text(await client.call_tool("ask", {}))
            mcp = next(area for area in gateway.areas if area.name == "mcp").contribution
            assert isinstance(mcp, McpArea)
            protocol = (await mcp.list_servers()).data[0]["protocolVersion"]
            counted = calls(tools, "painter", "ok")
    assert protocol == ("2025-11-25" if upstream_era == "legacy" else "2026-07-28")
    assert answered == "colour: green"
    assert painter.questions == [ASKED_FENCE.format(tool="ask")]
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


@pytest.mark.parametrize("upstream_era", ["http", "legacy"])
async def test_a_2026_caller_approves_then_answers_two_questions_and_the_call_is_audited_once(
    nats_server: LocalNats, tmp_path: Path, upstream_era: str
) -> None:
    person = Painter()
    twice = [tool("ask_twice", "Paint the fence and the gate.", readOnlyHint=True)]
    with started(upstream_era, tmp_path / "tools.json", twice) as upstream:
        async with (
            running_audit(nats_server.url) as audit,
            stack_and_tools(nats_server.url, tmp_path, audit_addr=f"127.0.0.1:{audit.port}") as (gateway, tools),
            Client(gateway.mcp, mode="auto", client_info=CLIENT, elicitation_callback=person) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask_twice", hitl=True)
            answered = text(await client.call_tool("ask_twice", {"text": "both"}))
            async with audit_client(audit.port) as stub:

                async def recorded() -> list[Any] | None:
                    reply = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(limit=10), timeout=5)
                    entries = [entry.record.tool_call for entry in reply.entries]
                    return entries or None

                records = await eventually(recorded)
            counted, parked = calls(tools, "painter", "ok"), parked_now(tools)
    assert answered == "fence: green, gate: green"
    asked = person.questions
    assert asked[1:] == [ASKED_FENCE.format(tool="ask_twice"), ASKED_GATE.format(tool="ask_twice")]
    assert "wants to run ask_twice" in asked[0]
    assert [(r.tool, r.outcome, r.hitl, r.proxied.server, r.proxied.tool) for r in records] == [
        ("ask_twice", common_pb2.OUTCOME_OK, common_pb2.HITL_DECISION_APPROVED, "painter", "ask_twice")
    ]
    assert records[0].result == "fence: green, gate: green"
    assert (counted, parked) == (1.0, 0.0)


GREEN = {INPUT_KEY: types.ElicitResult(action="accept", content={"colour": "green"})}


async def test_a_parked_call_resumes_only_with_its_own_sealed_state_and_only_once(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    with started("http", tmp_path / "tools.json", [tool("ask", "Paint the fence.", readOnlyHint=True)]) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path, {"tools_upstream_call_timeout_seconds": 60.0}) as (gw, tools),
            Client(gw.mcp, mode="auto", client_info=CLIENT, elicitation_callback=Painter()) as client,
        ):
            await exposed(gw, "painter", upstream.url, "ask")
            session = client.session
            first = await session.call_tool("ask", {"text": "a"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.request_state
            question = first.input_requests[INPUT_KEY].params
            assert isinstance(question, types.ElicitRequestFormParams)
            assert question.message == ASKED_FENCE.format(tool="ask")
            assert question.requested_schema["required"] == ["colour"]
            assert parked_now(tools) == 1.0
            state = first.request_state
            tampered = state[:-6] + ("A" * 6 if not state.endswith("A" * 6) else "B" * 6)
            # The SDK verifies the seal, and binds the state to the tool, its arguments and the caller's token.
            for name, arguments, sent in (("ask", {"text": "a"}, tampered), ("ask", {"text": "b"}, state)):
                with pytest.raises(MCPError, match="Invalid or expired requestState"):
                    await session.call_tool(name, arguments, request_state=sent, input_responses=GREEN)
            assert parked_now(tools) == 1.0  # neither took the parked call
            answered = await session.call_tool("ask", {"text": "a"}, request_state=state, input_responses=GREEN)
            replayed = await session.call_tool("ask", {"text": "a"}, request_state=state, input_responses=GREEN)
            counted, parked = calls(tools, "painter", "ok"), parked_now(tools)
    assert text(answered) == "colour: green"
    assert replayed.is_error and text(replayed) == (
        "Tool 'ask' was not run: this approval was already used. Call the tool again to ask the user afresh."
    )
    assert (counted, parked) == (1.0, 0.0)


async def test_a_parked_call_nobody_answers_is_dropped_after_the_approval_wait(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    with started("http", tmp_path / "tools.json", [tool("ask", "Paint the fence.", readOnlyHint=True)]) as upstream:
        async with (
            stack_and_tools(
                nats_server.url, tmp_path, {"tools_upstream_call_timeout_seconds": 60.0}, hitl_approval_wait_seconds=1
            ) as (gateway, tools),
            Client(gateway.mcp, mode="auto", client_info=CLIENT, elicitation_callback=Painter()) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask")
            first = await client.session.call_tool("ask", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            dropped = await eventually(lambda: calls(tools, "painter", "timeout"))
            late = await client.session.call_tool("ask", {}, request_state=first.request_state, input_responses=GREEN)
            parked = parked_now(tools)
    assert (dropped, parked) == (1.0, 0.0)
    assert late.is_error and text(late) == (
        "Tool 'ask' was not completed: nobody answered the upstream's question within 1 s, so the call was "
        "cancelled. Call the tool again if it is still needed."
    )


async def test_a_parked_call_ends_by_the_deadline_its_caller_sent_however_long_its_wait(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """A chat turn's call carries the turn's deadline: the tools replica drops the call parked at its question by
    then, at its first question and at the next one after a resume, though the wait sent with it (counted from each
    question) is 600 s; the gateway's own client to the tools service sends both."""
    twice = [tool("ask_twice", "Paint the fence and the gate.", readOnlyHint=True)]
    long = {"tools_upstream_call_timeout_seconds": 900.0}
    with started("http", tmp_path / "tools.json", twice) as upstream:
        async with stack_and_tools(nats_server.url, tmp_path, long) as (gateway, tools):
            await exposed(gateway, "painter", upstream.url, "ask_twice")
            client = ServedToolsClient(
                ServiceChannel("upstream", f"127.0.0.1:{tools.port}"), "saip.v1.UpstreamService", streams=True
            )
            try:

                def turn(left: float) -> Caller:
                    return Caller(client_name="chat-client", elicitation=True, deadline=Deadline.of(time.time() + left))

                first = await client.call("ask_twice", {}, turn(1), Roundtrip(), park=600)
                dropped = await eventually(lambda: calls(tools, "painter", "timeout"))
                fence = await client.call("ask_twice", {}, turn(600), Roundtrip(), park=600)
                assert isinstance(fence, common_pb2.ServedQuestion)
                green = common_pb2.ServedAnswer(action="accept", content_json='{"colour": "green"}')
                resume = common_pb2.ServedResume(parked_id=fence.parked_id, name="ask_twice", answer=green)
                gate = await client.call("ask_twice", {}, turn(1), Roundtrip(), park=600, resume=resume)
                both = await eventually(lambda: calls(tools, "painter", "timeout") == 2.0)
                late = common_pb2.ServedResume(parked_id=first.parked_id, name="ask_twice", answer=green)
                gone = await client.call("ask_twice", {}, turn(600), Roundtrip(), park=600, resume=late)
                parked = parked_now(tools)
            finally:
                await client.channel.close()
    assert isinstance(first, common_pb2.ServedQuestion) and first.parked_id
    assert isinstance(gate, common_pb2.ServedQuestion) and gate.message == ASKED_GATE.format(tool="ask_twice")
    assert (dropped, both, parked) == (1.0, True, 0.0)
    assert isinstance(gone, common_pb2.CallServedToolReply) and gone.is_error
    assert gone.text == (
        "This call no longer waits for an answer (answered already, expired, or its tools replica restarted). Call "
        "the tool again."
    )


async def test_a_question_beyond_the_parked_calls_limit_ends_its_call_with_a_refusal(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    limited = {"tools_upstream_parked_max": 1, "tools_upstream_call_timeout_seconds": 60.0}
    with started("http", tmp_path / "tools.json", [tool("ask", "Paint the fence.", readOnlyHint=True)]) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path, limited) as (gateway, tools),
            Client(gateway.mcp, mode="auto", client_info=CLIENT, elicitation_callback=Painter()) as client,
        ):
            await exposed(gateway, "painter", upstream.url, "ask")
            first = await client.session.call_tool("ask", {"text": "1"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            refused = await client.session.call_tool("ask", {"text": "2"}, allow_input_required=True)
            answered = await client.session.call_tool(
                "ask", {"text": "1"}, request_state=first.request_state, input_responses=GREEN
            )
            counted = (calls(tools, "painter", "refused"), calls(tools, "painter", "ok"))
    assert isinstance(refused, types.CallToolResult) and refused.is_error
    assert text(refused) == (
        "The upstream's question was not put to you: 1 calls already wait for their callers' answers on this tools "
        "replica (tools.upstream-parked-max), so this call was cancelled. Call the tool again once fewer wait."
    )
    assert text(answered) == "colour: green"
    assert counted == (1.0, 1.0)


@asynccontextmanager
async def two_replicas(
    nats_url: str, home: Path, upstream_url: str, name: str
) -> AsyncIterator[tuple[Running, Running, Client, Client]]:
    """Two tools replicas and two gateway replicas, each gateway's channel to another tools replica, serving the
    upstream's tool `name`; a 2026-07-28 client of each gateway."""
    long = FAST | {"tools_upstream_call_timeout_seconds": 60.0}
    async with running_tools(nats_url, **long) as holder, running_tools(nats_url, **long) as other:
        first, second = (
            Gateway(
                replica_settings(
                    home / replica, nats_url, replica, tools_addr=f"127.0.0.1:{port}", mcp_server_auth_token=TOKEN
                )
            )
            for replica, port in (("one", holder.port), ("two", other.port))
        )
        async with first.running(), second.running():
            await eventually(lambda: first.registry.tool("saip_expose_get") is not None)
            await exposed(first, "painter", upstream_url, name)
            await eventually(lambda: second.registry.tool(name) is not None)
            async with (
                Client(first.mcp, mode="auto", client_info=CLIENT, elicitation_callback=Painter()) as one,
                Client(second.mcp, mode="auto", client_info=CLIENT, elicitation_callback=Painter()) as two,
            ):
                yield holder, other, one, two


async def test_a_retry_that_reaches_another_tools_replica_is_forwarded_to_the_one_holding_the_call(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """Two gateway replicas, each with its channel to a different tools replica: the call parks on the first, and the
    retries that reach the second are forwarded over NATS to it; a retry naming a replica that is gone says so."""
    twice = [tool("ask_twice", "Paint the fence and the gate.", readOnlyHint=True)]
    with started("http", tmp_path / "tools.json", twice) as upstream:
        async with two_replicas(nats_server.url, tmp_path, upstream.url, "ask_twice") as (holder, other, one, two):
            asked = await one.session.call_tool("ask_twice", {}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            again = await two.session.call_tool(
                "ask_twice", {}, request_state=asked.request_state, input_responses=GREEN, allow_input_required=True
            )
            assert isinstance(again, types.InputRequiredResult)
            gate = again.input_requests[INPUT_KEY].params
            assert isinstance(gate, types.ElicitRequestFormParams)
            done = await two.session.call_tool(
                "ask_twice", {}, request_state=again.request_state, input_responses=GREEN
            )
            counted = (calls(holder, "painter", "ok"), calls(other, "painter", "ok"))
            answer = common_pb2.ServedAnswer(action="accept", content_json='{"colour": "green"}')
            resume = common_pb2.ServedResume(parked_id="0123456789ab.secret", name="ask_twice", answer=answer)
            gone = await streamed(other.port, common_pb2.ServedToolInput(resume=resume))
            unknown = common_pb2.CallServedToolRequest(name="nope", arguments_json="{}", park_seconds=5)
            refused = await streamed(other.port, common_pb2.ServedToolInput(call=unknown))
    assert gate.message == ASKED_GATE.format(tool="ask_twice")
    assert text(done) == "fence: green, gate: green"
    assert counted == (1.0, None)
    assert refused.is_error and refused.text.startswith("'nope' is not an exposed upstream tool")
    assert gone.is_error and gone.text == (
        "This call waited on tools replica '0123456789ab', which does not answer any more (restarted or stopped), so "
        "it no longer waits. Call the tool again."
    )


async def test_a_cancel_of_a_forwarded_resume_reaches_the_upstream_from_the_replica_holding_the_call(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    tools_file = tmp_path / "tools.json"
    with started("http", tools_file, [tool("ask_watched", "Paint, then wait.", readOnlyHint=True)]) as upstream:
        async with two_replicas(nats_server.url, tmp_path, upstream.url, "ask_watched") as (holder, _, one, two):
            asked = await one.session.call_tool("ask_watched", {}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            async with anyio.create_task_group() as group:
                group.start_soon(
                    functools.partial(
                        two.session.call_tool,
                        "ask_watched",
                        {},
                        request_state=asked.request_state,
                        input_responses=GREEN,
                    )
                )
                await eventually(Path(f"{tools_file}.started").exists)
                group.cancel_scope.cancel()
            await eventually(Path(f"{tools_file}.cancelled").exists)
            counted = await eventually(lambda: calls(holder, "painter", "cancelled"))
    assert counted == 1.0


async def streamed(port: int, first: common_pb2.ServedToolInput) -> common_pb2.CallServedToolReply:
    """The one reply of a CallServedToolStream that sends `first` alone, straight to the tools replica on `port`."""

    async def inputs() -> AsyncIterator[common_pb2.ServedToolInput]:
        yield first

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = upstream_pb2_grpc.UpstreamServiceStub(channel)  # type: ignore[no-untyped-call]
        events = [event async for event in stub.CallServedToolStream(inputs(), timeout=30)]
    assert [event.WhichOneof("event") for event in events] == ["reply"]
    return events[0].reply


# A 2026-07-28 caller that can elicit has its call run where it can park (`saip.tools.upstream.parking`): its cancel
# reaches the upstream from there too.
@pytest.mark.parametrize(("era", "eliciting"), [("legacy", False), ("auto", False), ("auto", True)])
async def test_a_callers_cancel_reaches_the_upstream(
    nats_server: LocalNats, tmp_path: Path, era: str, eliciting: bool
) -> None:
    tools_file = tmp_path / "tools.json"
    answers = Painter() if eliciting else None
    with started("http", tools_file, [tool("watched", "Waits until cancelled.", readOnlyHint=True)]) as upstream:
        async with (
            stack_and_tools(nats_server.url, tmp_path) as (gateway, tools),
            Client(gateway.mcp, mode=era, client_info=CLIENT, elicitation_callback=answers) as client,
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
