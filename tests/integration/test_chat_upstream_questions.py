"""An exposed upstream tool's own question inside a chat turn, through a real gateway, a real tools service, a real
upstream SDK server that elicits (tests/upstreams) and the scripted OpenAI-compatible model (tests/model_server.py):
the question reaches the client that started the turn in both eras (2025-11-25: while the turn waits; 2026-07-28:
the turn stops at it, its sealed state carrying the parked call's, and the retry resumes the parked call), its answer
goes back to the upstream, a client that cannot elicit has it declined, and a retry after the parked call expired,
whose parked state is another call's, or whose tools replica is gone is told so inside the turn. The turn and the
proxied call are each recorded once."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.common import names
from saip.common.approval_form import INPUT_KEY, arguments_hash
from saip.common.natsd import LocalNats
from saip.gateway.areas.chat.contribution import ChatArea
from saip.gateway.areas.chat.inputs import AskInput
from saip.gateway.areas.chat.store import Conversations
from saip.gateway.server import Gateway
from saip.gateway.surface.approval import Answer, Binding
from saip.gateway.surface.management import Caller
from saip.tools.server import Running
from saip.v1 import audit_pb2, common_pb2
from tests.integration.answers import Painter, Retry
from tests.integration.audit_support import audit_client, running_audit
from tests.integration.exposure_support import exposed
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import calls, parked_now, running_tools
from tests.model_server import MODEL, ScriptedModel, Step, call, say, scripted_model
from tests.results import envelope
from tests.upstreams.running import started, tool
from tests.waiting import eventually

pytestmark = pytest.mark.integration

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="chat-client", version="1.4")
TOKEN = "t" * 32
FAST = {"tools_upstream_refresh_seconds": 0.2, "tools_upstream_call_timeout_seconds": 60.0}
ASKED = "Upstream server 'painter' asks (through ask): Which colour should the fence be?"
GATED = '[risk L2] Chat turn started by this client wants to run a tool. Run \'ask\' with {"text": "fence"}?'
PAINT = {"prompt": "Paint the fence", "tools": ["ask"]}
GREEN = Answer("accept", {"colour": "green"})


@dataclass
class Stack:
    gateway: Gateway
    tools: Running
    model: ScriptedModel
    audit_port: int


@asynccontextmanager
async def stack(nats_url: str, home: Path, *steps: Step, hitl: bool = False, **overrides: Any) -> AsyncIterator[Stack]:
    """The whole path of a proxied call, with the chat configured and the upstream's `ask` exposed."""
    with (
        started("http", home / "tools.json", [tool("ask", "Paint the fence.", readOnlyHint=True)]) as upstream,
        scripted_model(*steps) as model,
    ):
        async with running_audit(nats_url) as audit, running_tools(nats_url, **FAST) as tools:
            settings = replica_settings(
                home,
                nats_url,
                "one",
                tools_addr=f"127.0.0.1:{tools.port}",
                mcp_server_auth_token=TOKEN,
                audit_addr=f"127.0.0.1:{audit.port}",
                chat_base_url=model.url,
                chat_model=MODEL,
                **overrides,
            )
            gateway = Gateway(settings)
            async with gateway.running():
                await eventually(lambda: gateway.registry.tool("saip_expose_get") is not None)
                await exposed(gateway, "painter", upstream.url, "ask", hitl=hitl)
                yield Stack(gateway, tools, model, audit.port)


class Refuser(Painter):
    """Declines the upstream's question (and approves saip's own, as the painter does)."""

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if "asks (through" not in params.message:
            return await super().__call__(context, params)
        self.questions.append(params.message)
        return types.ElicitResult(action="decline")


async def recorded(port: int) -> tuple[list[Any], list[Any]]:
    """The chat turns' management records and the tool call records, once the newest turn's record is chained (a
    turn's record is written after its tool calls')."""
    async with audit_client(port) as stub:

        async def listed() -> tuple[list[Any], list[Any]] | None:
            managed = await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest(limit=50), timeout=5)
            turns = [entry.record.management for entry in managed.entries]
            turns = [record for record in turns if record.tool == "saip_chat_ask"]
            if not turns:
                return None
            called = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(limit=50), timeout=5)
            return turns, [entry.record.tool_call for entry in called.entries]

        return await eventually(listed)


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstreams_question_inside_a_turn_is_asked_at_the_callers_client_and_answered_upstream(
    nats_server: LocalNats, tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The exposed tool asks saip's own HITL question first (the chat's), then the upstream asks its own: both reach
    the client that started the turn, and a 2026-07-28 turn stops at each and resumes from it."""
    painter = Painter()
    script = (call("ask", {"text": "fence"}), say("The fence is green."))
    async with stack(nats_server.url, tmp_path, *script, hitl=True) as running:
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=painter) as client:
            result = envelope(await client.call_tool("saip_chat_ask", PAINT))
        turns, tool_calls = await recorded(running.audit_port)
        counted, parked = calls(running.tools, "painter", "ok"), parked_now(running.tools)

    assert result["ok"], result["message"]
    assert painter.questions == [GATED, ASKED]
    assert running.model.tool_results(1) == ["colour: green"]
    # The model was asked twice: a 2026-07-28 turn resumed from each question instead of starting over.
    assert len(running.model.requests) == 2
    assert result["data"]["toolCalls"] == [{"name": "ask", "outcome": "ran"}]
    assert result["data"]["answer"] == "The fence is green."
    [turn] = turns
    assert turn.outcome == common_pb2.OUTCOME_OK
    assert turn.summary.endswith(f"ok, model {MODEL}, 50 tokens, 1 tool call: ask ran")
    [proxied] = tool_calls
    assert (proxied.tool, proxied.outcome, proxied.result) == ("ask", common_pb2.OUTCOME_OK, "colour: green")
    assert (proxied.proxied.server, proxied.proxied.tool, proxied.caller.client_name) == (
        "painter",
        "ask",
        "chat-client",
    )
    assert (proxied.hitl, proxied.side) == (common_pb2.HITL_DECISION_APPROVED, common_pb2.HITL_SIDE_CHAT)
    assert (counted, parked) == (1.0, 0.0)
    # Each question the turn stopped at was parked once, by the tool call's gate, not again as the turn's.
    assert "a question could not be parked" not in [record.getMessage() for record in caplog.records]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_declined_or_unaskable_upstream_question_is_declined_upstream_and_the_model_told(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    refuser = Refuser()
    script = (
        call("ask", {"text": "fence"}),
        say("The person declined."),
        call("ask", {"text": "fence"}),
        say("Nobody could be asked."),
    )
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=refuser) as client:
            declined = envelope(await client.call_tool("saip_chat_ask", PAINT))
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT) as headless:
            unasked = envelope(await headless.call_tool("saip_chat_ask", PAINT))
        turns, tool_calls = await eventually(lambda: _both_turns(running.audit_port))

    assert declined["ok"] and unasked["ok"]
    assert refuser.questions == [ASKED]
    # The upstream read the decline and said so; the model got the tool's own result.
    assert running.model.tool_results(1) == running.model.tool_results(3) == ["declined"]
    assert declined["data"]["toolCalls"] == unasked["data"]["toolCalls"] == [{"name": "ask", "outcome": "ran"}]
    assert len(turns) == 2
    assert [(r.tool, r.outcome, r.result) for r in tool_calls] == [("ask", common_pb2.OUTCOME_OK, "declined")] * 2


async def _both_turns(port: int) -> tuple[list[Any], list[Any]] | None:
    turns, tool_calls = await recorded(port)
    return (turns, tool_calls) if len(turns) == 2 else None


async def test_a_2026_retry_after_the_parked_call_expired_is_told_so_inside_the_turn(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    script = (call("ask", {"text": "fence"}), say("Nobody answered in time."))
    async with stack(nats_server.url, tmp_path, *script, hitl_approval_wait_seconds=1) as running:
        async with Client(running.gateway.mcp, mode=MODERN, client_info=CLIENT, elicitation_callback=Painter()) as ai:
            asked = await ai.session.call_tool("saip_chat_ask", PAINT, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult) and asked.request_state
            question = asked.input_requests[INPUT_KEY].params
            assert isinstance(question, types.ElicitRequestFormParams)
            dropped = await eventually(lambda: calls(running.tools, "painter", "timeout"))
            green = {INPUT_KEY: types.ElicitResult(action="accept", content=GREEN.content)}
            late = envelope(
                await ai.session.call_tool(
                    "saip_chat_ask", PAINT, request_state=asked.request_state, input_responses=green
                )
            )
        turns, tool_calls = await recorded(running.audit_port)

    assert question.message == ASKED
    assert question.requested_schema["required"] == ["colour"]
    assert dropped == 1.0
    assert late["ok"], late["message"]
    assert running.model.tool_results(1) == [
        "Tool 'ask' was not completed: nobody answered the upstream's question within 1 s, so the call was "
        "cancelled. Call the tool again if it is still needed."
    ]
    assert late["data"]["toolCalls"] == [{"name": "ask", "outcome": "failed"}]
    assert late["data"]["answer"] == "Nobody answered in time."
    [turn] = turns
    assert turn.summary.endswith("1 tool call: ask failed")
    [proxied] = tool_calls
    assert (proxied.tool, proxied.outcome) == ("ask", common_pb2.OUTCOME_TIMEOUT)


async def test_a_2026_retry_whose_parked_state_is_foreign_or_whose_replica_is_gone_is_told_so_inside_the_turn(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """The turn's sealed state (as the SDK hands it over once its seal verified) names a parked call of other
    arguments, then one on a tools replica that no longer answers (a restart drops its parked calls): each retry is
    told so at once inside its turn, the model gets the relay's sentence as the tool's result, and the turn goes on."""
    script = (
        call("ask", {"text": "fence"}),
        say("That answer was for another call."),
        call("ask", {"text": "fence"}),
        say("The call was lost."),
    )
    async with stack(nats_server.url, tmp_path, *script) as running:
        [area] = [area.contribution for area in running.gateway.areas if area.name == "chat"]
        assert isinstance(area, ChatArea)
        conversations = Conversations(functools.partial(running.gateway.bucket, names.CHAT_BUCKET))

        async def retried(parked_id: str, arguments: dict[str, Any]) -> Any:
            """Start a turn until it stops at the upstream's question, then retry it with a forged parked state."""
            async with Client(
                running.gateway.mcp, mode=MODERN, client_info=CLIENT, elicitation_callback=Painter()
            ) as ai:
                asked = await ai.session.call_tool("saip_chat_ask", PAINT, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            [waiting] = [entry for entry in await conversations.all() if entry.HasField("pending")]
            now = time.time()
            forged = {
                "parked": 1,
                "p": parked_id,
                "t": "ask",
                "a": arguments_hash(arguments),
                "n": f"never-spent-{parked_id}",
                "iat": now,
                "exp": now + 60,
                "st": now,
                "d": None,
            }
            claims = {
                "chat": 1,
                "c": waiting.id,
                "t": waiting.pending.turn_id,
                "a": Binding.of("saip_chat_ask", AskInput(**PAINT).model_dump()).arguments_hash,
                "s": json.dumps(forged),
                "n": "never-parked",  # the turn's own question: one never parked is the retry's to record
            }
            retry = Retry(json.dumps(claims), GREEN)
            return await area.ask(
                AskInput(**PAINT), Caller(client_name="chat-client", elicitation=True, interaction=retry)
            )

        foreign = await retried("0123456789ab.secret", {"text": "gate"})
        lost = await retried("0123456789ab.secret", {"text": "fence"})

    assert foreign.ok and lost.ok, (foreign.message, lost.message)
    assert running.model.tool_results(1) == [
        "Tool 'ask' was not run: this answer belongs to the upstream's question of another call (another tool or "
        "other arguments). Call the tool again to ask afresh."
    ]
    assert running.model.tool_results(3) == [
        "This call waited on tools replica '0123456789ab', which does not answer any more (restarted or stopped), so "
        "it no longer waits. Call the tool again."
    ]
    assert foreign.data["toolCalls"] == lost.data["toolCalls"] == [{"name": "ask", "outcome": "failed"}]
    assert (foreign.data["answer"], lost.data["answer"]) == ("That answer was for another call.", "The call was lost.")


async def test_a_2026_turn_stopped_at_an_upstreams_question_parks_the_call_no_longer_than_the_turn(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """The upstream's question goes back with the turn's time left as its wait (3 s or less, not the approval wait):
    nobody answers, the tools replica drops the parked call, and the sweeper records the proxied call and the turn as
    TIMEOUT."""
    async with stack(nats_server.url, tmp_path, call("ask", {"text": "fence"})) as running:
        async with Client(running.gateway.mcp, mode=MODERN, client_info=CLIENT, elicitation_callback=Painter()) as ai:
            ask = PAINT | {"timeoutSeconds": 3}  # long enough for a loaded machine to reach the question first
            asked = await ai.session.call_tool("saip_chat_ask", ask, allow_input_required=True)
        dropped = await eventually(lambda: calls(running.tools, "painter", "timeout"))
        turns, tool_calls = await eventually(lambda: _with_tool_call(running.audit_port))

    assert isinstance(asked, types.InputRequiredResult)
    question = asked.input_requests[INPUT_KEY].params
    assert isinstance(question, types.ElicitRequestFormParams) and question.message == ASKED
    assert dropped == 1.0
    [proxied] = tool_calls
    assert (proxied.tool, proxied.outcome) == ("ask", common_pb2.OUTCOME_TIMEOUT)
    # The wait is what the turn had left at the question, in whole seconds rounded up.
    assert proxied.result in {
        f"Tool 'ask' was not completed: nobody answered the upstream's question within {wait} s, so the call was "
        "cancelled. Call the tool again if it is still needed."
        for wait in (1, 2, 3)
    }
    [turn] = turns
    assert turn.outcome == common_pb2.OUTCOME_TIMEOUT
    assert turn.summary.endswith(f"(timeout 3 s): timeout, model {MODEL}, 25 tokens, 1 tool call: ask failed")


async def _with_tool_call(port: int) -> tuple[list[Any], list[Any]] | None:
    turns, tool_calls = await recorded(port)
    return (turns, tool_calls) if tool_calls else None
