"""The chat sub-agent through a real gateway, a real serving service and a real NATS, with a scripted
OpenAI-compatible model over HTTP (tests/model_server.py) driven through the `openai` library: a tool call then an
answer, a gated tool asked at the caller's client in both eras (the 2026-07-28 turn stops at the question and
resumes on the retry), a client that cannot ask, a saip_ tool, a model that hangs, a malformed reply, a model that
never stops calling tools, no model at all; a knowledge pipeline as the turn's source, on a real knowledge service;
a turn whose end comes while a tool call or its question is out (asked at the client, held out of band, or gone back
to a 2026-07-28 client that never answers); and the audit records of each turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.common.approval_form import INPUT_KEY
from saip.common.natsd import LocalNats
from saip.gateway.areas.chat.contribution import ChatArea
from saip.gateway.areas.chat.inputs import AskInput
from saip.gateway.areas.chat.turn import MAX_ROUNDS
from saip.gateway.server import Gateway
from saip.gateway.surface.approval import Answer, Binding
from saip.gateway.surface.management import Caller
from saip.v1 import audit_pb2, common_pb2, knowledge_pb2
from tests.integration.answers import Retry
from tests.integration.audit_support import audit_client, running_audit
from tests.integration.gateways import replica_settings
from tests.integration.knowledge_support import ingest, knowledge_settings, knowledge_stub, running_knowledge
from tests.integration.publishing import Catalog, publishing, served
from tests.model_server import MODEL, ScriptedModel, Step, call, garbage, hang, say, scripted_model
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.integration

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="chat-client", version="1.4")
TOKEN = "t" * 24
TOOLS = "saip.v1.ToolsService"
APPROVED = Answer("accept", {"approve": ["run"]})


@dataclass
class Stack:
    gateway: Gateway
    catalog: Catalog
    model: ScriptedModel
    audit_port: int


@asynccontextmanager
async def stack(nats_url: str, home: Path, *steps: Step, **overrides: Any) -> AsyncIterator[Stack]:
    catalog = Catalog()
    catalog.serve(served("echo"), served("wiki_outline", hitl=True, risk=2))
    with scripted_model(*steps) as model:
        async with running_audit(nats_url) as audit, publishing(TOOLS, catalog) as address:
            chat = {"chat_base_url": model.url, "chat_model": MODEL} | overrides
            settings = replica_settings(home, nats_url, "one", tools_addr=address, mcp_server_auth_token=TOKEN, **chat)
            settings.audit_addr = f"127.0.0.1:{audit.port}"
            gateway = Gateway(settings)
            async with gateway.running():
                await eventually(lambda: gateway.registry.tool("wiki_outline") is not None)
                yield Stack(gateway, catalog, model, audit.port)


class Person:
    def __init__(self, approve: bool = True) -> None:
        self.approve = approve
        self.questions: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": ["run"] if self.approve else []})


class Away(Person):
    """Takes each question and never answers it: the person is away from the screen."""

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        await anyio.sleep_forever()
        raise AssertionError("a question nobody answers has no result")


async def records(port: int, kind: str, count: int) -> list[Any]:
    """The newest `count` records of a kind (management calls or tool calls), newest first, once they are chained."""
    async with audit_client(port) as stub:

        async def listed() -> list[Any] | None:
            if kind == "management":
                reply = await stub.ListManagementCalls(audit_pb2.ListManagementCallsRequest(limit=20), timeout=5)
                found = [entry.record.management for entry in reply.entries]
            else:
                reply = await stub.ListToolCalls(audit_pb2.ListToolCallsRequest(limit=20), timeout=5)
                found = [entry.record.tool_call for entry in reply.entries]
            return found if len(found) >= count else None

        return await eventually(listed)


async def test_a_turn_calls_a_tool_then_answers_with_progress_and_is_audited(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    script = (call("echo", {"text": "hi"}), say("The echo said hi."))
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client:
            result = envelope(
                await client.call_tool(
                    "saip_chat_ask", {"prompt": "Echo hi", "tools": ["echo"]}, progress_callback=on_progress
                )
            )
            listed = envelope(await client.call_tool("saip_chat_list_conversations", {}))
        management = await records(running.audit_port, "management", 2)
        [tool_call] = await records(running.audit_port, "tool", 1)

    assert result["ok"], result["message"]
    assert result["message"] == f"The chat answered (model {MODEL}, 50 tokens, 1 tool call: echo ran)."
    data = result["data"]
    assert (data["answer"], data["status"], data["toolCalls"]) == (
        "The echo said hi.",
        "ok",
        [{"name": "echo", "outcome": "ran"}],
    )
    assert progress == ["Asking the model (round 1)", "Running tool 'echo'", "Asking the model (round 2)"]
    assert running.catalog.calls == [("echo", {"text": "hi"}, "chat-client")]
    first, second = running.model.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["echo"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert running.model.tool_results(1) == [json.dumps({"result": "echo: hi"})]
    assert second["model"] == MODEL

    [conversation] = listed["data"]["conversations"]
    assert conversation["conversationId"] == data["conversationId"]
    assert [turn["answer"] for turn in conversation["turns"]] == ["The echo said hi."]

    ask = next(record for record in management if record.tool == "saip_chat_ask")
    assert ask.outcome == common_pb2.OUTCOME_OK and ask.level == common_pb2.APPROVAL_LEVEL_WRITE
    assert ask.summary == (
        f"one chat turn in a new conversation with echo (timeout 300 s): ok, model {MODEL}, 50 tokens, 1 tool call: "
        "echo ran"
    )
    assert f"model {MODEL}, 50 tokens, 1 tool call: echo ran" in ask.result
    assert (tool_call.tool, tool_call.outcome, tool_call.caller.client_name) == (
        "echo",
        common_pb2.OUTCOME_OK,
        "chat-client",
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_a_gated_tool_asks_the_callers_client_and_counts_on_the_chat_side(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    person = Person()
    script = (call("wiki_outline", {"text": "saip"}), say("Outlined."))
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=person) as client:
            result = envelope(
                await client.call_tool("saip_chat_ask", {"prompt": "Outline saip", "tools": ["wiki_outline"]})
            )
            again = envelope(await client.call_tool("saip_chat_list_conversations", {"turns": 1}))
        [tool_call] = await records(running.audit_port, "tool", 1)

    assert result["ok"], result["message"]
    assert person.questions == [
        '[risk L2] Chat turn started by this client wants to run a tool. Run \'wiki_outline\' with {"text": "saip"}?'
    ]
    assert result["data"]["toolCalls"] == [{"name": "wiki_outline", "outcome": "ran"}]
    # The model was asked twice: a 2026-07-28 turn resumed from its question instead of starting over.
    assert len(running.model.requests) == 2
    assert running.catalog.calls == [("wiki_outline", {"text": "saip"}, "chat-client")]
    assert (tool_call.hitl, tool_call.side) == (common_pb2.HITL_DECISION_APPROVED, common_pb2.HITL_SIDE_CHAT)
    [conversation] = again["data"]["conversations"]
    assert conversation["waitingForApproval"] is False
    assert conversation["turns"][0]["answer"] == "Outlined."


@pytest.mark.parametrize("mode", ERAS)
async def test_a_declined_or_unaskable_gated_tool_never_runs_and_the_model_is_told(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    person = Person(approve=False)
    script = (
        call("wiki_outline", {"text": "a"}),
        say("The person declined."),
        call("wiki_outline", {"text": "b"}),
        say("I could not ask."),
    )
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=person) as client:
            declined = envelope(await client.call_tool("saip_chat_ask", {"prompt": "a", "tools": ["wiki_outline"]}))
        async with Client(running.gateway.mcp, mode=mode, client_info=CLIENT) as headless:
            denied = envelope(await headless.call_tool("saip_chat_ask", {"prompt": "b", "tools": ["wiki_outline"]}))

    assert declined["ok"] and denied["ok"]
    assert len(person.questions) == 1
    assert running.model.tool_results(1) == [
        "Tool 'wiki_outline' was not run: the user declined. Do not retry it for this request."
    ]
    [told] = running.model.tool_results(3)
    assert told.startswith("Tool 'wiki_outline' was not run: it needs human approval and this client cannot ask")
    assert (
        declined["data"]["toolCalls"] == denied["data"]["toolCalls"] == [{"name": "wiki_outline", "outcome": "failed"}]
    )
    assert running.catalog.calls == []


async def test_a_saip_tool_or_one_not_named_is_refused_inside_the_turn(nats_server: LocalNats, tmp_path: Path) -> None:
    script = (
        call("saip_chat_ask", {"prompt": "again"}),
        call("wiki_outline", {"text": "x"}, call_id="call-2"),
        say("Refused twice."),
    )
    async with (
        stack(nats_server.url, tmp_path, *script) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        named = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x", "tools": ["saip_tools_list"]}))
        result = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x", "tools": ["echo"]}))

    assert not named["ok"]
    assert named["message"].startswith("saip_ management tools are never available inside a chat turn")
    assert result["ok"], result["message"]
    assert running.model.tool_results(1) == [
        "Tool 'saip_chat_ask' was not run: saip_ management tools are never callable from a chat turn. Answer with "
        "the tools this turn has."
    ]
    assert running.model.tool_results(2)[1] == (
        "Tool 'wiki_outline' was not run: it is not among the tools of this turn (echo). Answer with those."
    )
    assert result["data"]["toolCalls"] == [
        {"name": "saip_chat_ask", "outcome": "refused"},
        {"name": "wiki_outline", "outcome": "refused"},
    ]
    assert running.catalog.calls == []


async def test_a_model_that_hangs_ends_the_turn_at_its_timeout_with_what_it_had(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path, call("echo", {"text": "one"}), hang()) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        ask = {"prompt": "x", "tools": ["echo"], "timeoutSeconds": 2}
        result = envelope(await client.call_tool("saip_chat_ask", ask))

    assert not result["ok"]
    assert result["message"].startswith("The turn reached its timeout (2 s) and ended with what it had")
    assert result["data"]["status"] == "timeout"
    assert result["data"]["toolCalls"] == [{"name": "echo", "outcome": "ran"}]


async def test_a_malformed_reply_or_an_endless_one_ends_the_turn_with_an_error(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    endless = [call("echo", {"text": str(n)}) for n in range(MAX_ROUNDS)]
    async with (
        stack(nats_server.url, tmp_path, garbage(), *endless) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        malformed = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x"}))
        looping = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x", "tools": ["echo"]}))

    assert not malformed["ok"]
    assert malformed["message"].startswith("The turn ended: the model's reply was malformed")
    assert not looping["ok"]
    assert looping["message"].startswith(f"The model asked for tools {MAX_ROUNDS} rounds in a row without answering")
    assert len(running.catalog.calls) == MAX_ROUNDS


async def test_a_conversation_continues_with_its_history(nats_server: LocalNats, tmp_path: Path) -> None:
    async with (
        stack(nats_server.url, tmp_path, say("Blue."), say("You asked about the sky.")) as running,
        Client(running.gateway.mcp, mode=MODERN, client_info=CLIENT) as client,
    ):
        first = envelope(await client.call_tool("saip_chat_ask", {"prompt": "What colour is the sky?"}))
        conversation = first["data"]["conversationId"]
        second = envelope(
            await client.call_tool("saip_chat_ask", {"prompt": "What did I ask?", "conversationId": conversation})
        )
        unknown = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x", "conversationId": "nope"}))

    assert second["ok"] and second["data"]["conversationId"] == conversation
    assert [(m["role"], m["content"]) for m in running.model.requests[1]["messages"][1:]] == [
        ("user", "What colour is the sky?"),
        ("assistant", "Blue."),
        ("user", "What did I ask?"),
    ]
    assert not unknown["ok"] and unknown["message"].startswith("There is no conversation 'nope'")


async def test_without_a_model_the_tools_say_what_to_set(nats_server: LocalNats, tmp_path: Path) -> None:
    async with (
        stack(nats_server.url, tmp_path, chat_base_url=None, chat_model=None) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        asked = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x"}))
        listed = envelope(await client.call_tool("saip_chat_list_conversations", {}))

    assert not asked["ok"]
    assert asked["message"].startswith("No chat model is configured: set chat.base-url (SAIP_CHAT_BASE_URL)")
    assert asked["message"].endswith("Missing: chat.base-url, chat.model.")
    assert listed["ok"] and listed["warnings"] == [asked["message"]]
    assert running.model.requests == []


async def test_the_api_key_is_read_from_the_variable_its_reference_names(
    nats_server: LocalNats, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAT_TEST_KEY", "sk-test-0123456789")
    async with (
        stack(nats_server.url, tmp_path, say("ok"), say("ok"), chat_api_key="${CHAT_TEST_KEY}") as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        result = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x"}))
        # The reference was resolved when the settings were read: the variable going away later changes nothing.
        monkeypatch.delenv("CHAT_TEST_KEY")
        again = envelope(await client.call_tool("saip_chat_ask", {"prompt": "x"}))

    assert result["ok"] and again["ok"], result["message"]
    assert [headers["authorization"] for headers in running.model.headers] == ["Bearer sk-test-0123456789"] * 2


async def test_an_answer_for_another_call_or_a_turn_no_longer_waiting_is_refused(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    script = (say("First."),)
    async with stack(nats_server.url, tmp_path, *script) as running:
        [area] = [area.contribution for area in running.gateway.areas if area.name == "chat"]
        assert isinstance(area, ChatArea)
        arguments = AskInput(prompt="x", tools=["wiki_outline"])
        first = await area.ask(arguments, Caller(client_name="chat-client"))
        conversation = first.data["conversationId"]
        bound = Binding.of("saip_chat_ask", arguments.model_dump()).arguments_hash

        def retry(claims: dict[str, Any]) -> Caller:
            state = json.dumps({"chat": 1, "c": conversation, "t": "turn", "s": "{}"} | claims)
            return Caller(client_name="chat-client", elicitation=True, interaction=Retry(state, APPROVED))

        other = await area.ask(arguments, retry({"a": "another call"}))
        stale = await area.ask(arguments, retry({"a": bound}))

    assert first.ok
    assert (other.ok, other.message) == (
        False,
        "This answer is for a different chat turn. Call saip_chat_ask again to ask afresh.",
    )
    assert not stale.ok and stale.message.startswith("This answer is for a chat turn that is no longer waiting")
    assert len(running.model.requests) == 1


RUNBOOK = (
    "# NATS runbook\n\nRestart the NATS broker with systemctl restart nats when clients report a stale connection."
)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_knowledge_pipeline_gives_the_model_its_passages_and_the_turn_records_the_sources(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    person = Person()
    script = (call("wiki_outline", {"text": "restart"}), say("Restart it with systemctl restart nats [1]."))
    async with (
        running_knowledge(knowledge_settings(tmp_path / "knowledge", nats_server.url)) as knowledge,
        knowledge_stub(knowledge.port) as stub,
    ):
        await ingest(stub, text=RUNBOOK, name="Runbook")
        await stub.ApplyPipeline(knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=["Runbook"]))
        async with stack(nats_server.url, tmp_path, *script, knowledge_addr=f"127.0.0.1:{knowledge.port}") as running:
            async with Client(
                running.gateway.mcp, mode=mode, client_info=CLIENT, elicitation_callback=person
            ) as client:
                ask = {"prompt": "How do I restart the NATS broker?", "tools": ["wiki_outline"], "pipeline": "Ops"}
                result = envelope(await client.call_tool("saip_chat_ask", ask))
                unknown = envelope(await client.call_tool("saip_chat_ask", ask | {"pipeline": "Payroll"}))
                listed = envelope(await client.call_tool("saip_chat_list_conversations", {"turns": 1}))
            management = await records(running.audit_port, "management", 3)

    assert result["ok"], result["message"]
    assert result["message"].endswith("1 tool call: wiki_outline ran; 1 passage from the knowledge pipeline 'Ops').")
    [used] = result["data"]["sources"]
    assert used == {"document": "Runbook", "source": "text", "position": 0, "page": None, "relevance": 1.0}
    assert result["data"]["pipeline"] == "Ops"
    # Every request of the turn, the one after the 2026-07-28 question included, carries the passages and their source.
    assert len(running.model.requests) == 2
    for request in running.model.requests:
        system, prompt = request["messages"][0], request["messages"][1]
        assert system["role"] == "system"
        assert "Passages the knowledge pipeline 'Ops' found for the user's question follow" in system["content"]
        assert (
            "[1] Runbook, passage 0 (text)\n# NATS runbook\n\nRestart the NATS broker with systemctl"
            in system["content"]
        )
        assert (prompt["role"], prompt["content"]) == ("user", "How do I restart the NATS broker?")
    [turn] = listed["data"]["conversations"][0]["turns"]
    assert (turn["prompt"], turn["pipeline"], turn["sources"]) == (ask["prompt"], "Ops", [used])

    assert not unknown["ok"]
    assert unknown["message"] == (
        "The knowledge pipeline 'Payroll' cannot be this turn's source: no pipeline named 'Payroll'; the pipelines are "
        "'All documents (simple)', 'Ops'. saip_knowledge_list_pipelines lists the pipelines; leave pipeline out to "
        "ask without one."
    )
    asked = [record for record in management if record.tool == "saip_chat_ask"]
    assert any("and the knowledge pipeline 'Ops' (timeout 300 s): ok" in record.summary for record in asked)


# The timeout of the turns that reach their end: long enough for a loaded machine to reach the question first. The
# question's wait is what the turn has left then, said in whole seconds rounded up: 1 to TURN s.
TURN = 3
SHORT = {"prompt": "Outline saip", "tools": ["wiki_outline"], "timeoutSeconds": TURN}
GATED = '[risk L2] Chat turn started by this client wants to run a tool. Run \'wiki_outline\' with {"text": "saip"}?'
NO_APPROVAL = {
    f"Tool 'wiki_outline' was not run: no approval within {wait} s. Do not retry it for this request; ask the user to "
    "run it from the app if it is still needed."
    for wait in range(1, TURN + 1)
}
COUNTDOWN = {f"Waiting for approval: {wait} s left" for wait in range(1, TURN + 1)}
CUT_SHORT = (
    f"The turn reached its timeout ({TURN} s) and ended with what it had (model {MODEL}, 25 tokens, 1 tool call: "
    "wiki_outline failed). It had no answer yet."
)


async def turn_records(port: int, count: int) -> list[Any]:
    """The newest `count` records of chat turns, newest first, once there are that many."""

    async def found() -> list[Any] | None:
        asked = [r for r in await records(port, "management", 1) if r.tool == "saip_chat_ask"]
        return asked if len(asked) >= count else None

    return await eventually(found)


async def test_a_question_inside_a_turn_waits_no_longer_than_the_turn_and_its_call_is_recorded_as_timed_out(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """2025-11-25: the gated tool asks with the turn's time left (TURN s or less), not the approval wait (180 s);
    nobody answers, so the turn's end cuts the question: the tool call is a TIMEOUT in the seed's words, the turn
    counts it failed and is recorded as a management call that timed out."""
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    person = Away()
    async with stack(nats_server.url, tmp_path, call("wiki_outline", {"text": "saip"})) as running:
        async with Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT, elicitation_callback=person) as client:
            result = envelope(await client.call_tool("saip_chat_ask", SHORT, progress_callback=on_progress))
        [tool_call] = await records(running.audit_port, "tool", 1)
        [turn] = await turn_records(running.audit_port, 1)

    assert person.questions == [GATED]
    assert progress[:2] == ["Asking the model (round 1)", "Running tool 'wiki_outline'"]
    assert len(progress) == 3 and progress[2] in COUNTDOWN
    assert (result["ok"], result["message"], result["data"]["status"]) == (False, CUT_SHORT, "timeout")
    assert result["data"]["toolCalls"] == [{"name": "wiki_outline", "outcome": "failed"}]
    assert tool_call.outcome == common_pb2.OUTCOME_TIMEOUT and tool_call.result in NO_APPROVAL
    assert (tool_call.hitl, tool_call.side) == (common_pb2.HITL_DECISION_TIMEOUT, common_pb2.HITL_SIDE_CHAT)
    assert (turn.outcome, turn.result) == (common_pb2.OUTCOME_TIMEOUT, CUT_SHORT)
    assert turn.summary.endswith(
        f"(timeout {TURN} s): timeout, model {MODEL}, 25 tokens, 1 tool call: wiki_outline failed"
    )
    assert running.catalog.calls == []


async def test_a_tool_call_the_turns_end_cuts_is_recorded_as_timed_out_and_counted_failed(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        stack(nats_server.url, tmp_path, call("echo", {"text": "hang"})) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as client,
    ):
        result = envelope(
            await client.call_tool("saip_chat_ask", {"prompt": "x", "tools": ["echo"], "timeoutSeconds": TURN})
        )
        [tool_call] = await records(running.audit_port, "tool", 1)
        [turn] = await turn_records(running.audit_port, 1)

    assert result["data"]["toolCalls"] == [{"name": "echo", "outcome": "failed"}]
    assert (tool_call.outcome, tool_call.result) == (
        common_pb2.OUTCOME_TIMEOUT,
        "Tool 'echo' was not completed: the chat turn that called it reached its timeout first. Ask again with a "
        "longer timeoutSeconds if it is still needed.",
    )
    assert running.catalog.calls == [("echo", {"text": "hang"}, "chat-client")]
    assert turn.outcome == common_pb2.OUTCOME_TIMEOUT
    assert turn.result.startswith(f"The turn reached its timeout ({TURN} s) and ended with what it had")


async def test_an_out_of_band_question_inside_a_turn_is_held_no_longer_than_the_turn(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """A client that cannot ask, with out-of-band approvals on: the question is held for the person (2025-11-25)
    within the turn's time, and the turn's end records it as unanswered."""
    script = (call("wiki_outline", {"text": "saip"}),)
    async with (
        stack(nats_server.url, tmp_path, *script, management_out_of_band_approvals=True) as running,
        Client(running.gateway.mcp, mode=LEGACY, client_info=CLIENT) as headless,
    ):
        result = envelope(await headless.call_tool("saip_chat_ask", SHORT))
        [tool_call] = await records(running.audit_port, "tool", 1)
        [turn] = await turn_records(running.audit_port, 1)

    assert result["message"] == CUT_SHORT
    assert (tool_call.outcome, tool_call.hitl) == (common_pb2.OUTCOME_TIMEOUT, common_pb2.HITL_DECISION_TIMEOUT)
    assert tool_call.result in NO_APPROVAL
    assert (turn.outcome, turn.result) == (common_pb2.OUTCOME_TIMEOUT, CUT_SHORT)
    assert running.catalog.calls == []


async def test_a_2026_turn_whose_question_nobody_answers_is_recorded_as_timed_out_once_with_its_tool_call(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """The question goes back to the client with the turn's time left as its wait; nobody answers, so the sweeper
    records the tool call and the turn as TIMEOUT once the turn's deadline passed; the conversation no longer waits,
    and shows the turn as timed out; a retry after that ends the turn as timed out, in its conversation (the same
    turn, once), without a second record."""
    script = (call("wiki_outline", {"text": "saip"}), say("Another turn."))
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=MODERN, client_info=CLIENT, elicitation_callback=Person()) as ai:
            asked = await ai.session.call_tool("saip_chat_ask", SHORT, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            [turn] = await turn_records(running.audit_port, 1)
            [tool_call] = await records(running.audit_port, "tool", 1)
            waiting = envelope(await ai.call_tool("saip_chat_list_conversations", {"turns": 3}))
            approved = {INPUT_KEY: types.ElicitResult(action="accept", content={"approve": ["run"]})}
            late = envelope(
                await ai.session.call_tool(
                    "saip_chat_ask", SHORT, request_state=asked.request_state, input_responses=approved
                )
            )
            after = envelope(await ai.call_tool("saip_chat_list_conversations", {"turns": 3}))
            envelope(await ai.call_tool("saip_chat_ask", {"prompt": "Another"}))
        # The newest turn's record is on the trail: a second record of the late retry would have come before it.
        turns = await turn_records(running.audit_port, 2)
        tool_calls = await records(running.audit_port, "tool", 1)

    question = asked.input_requests[INPUT_KEY].params
    assert isinstance(question, types.ElicitRequestFormParams) and question.message == GATED
    assert (tool_call.outcome, tool_call.hitl) == (common_pb2.OUTCOME_TIMEOUT, common_pb2.HITL_DECISION_TIMEOUT)
    assert tool_call.result in NO_APPROVAL
    assert (turn.outcome, turn.result, turn.hitl) == (
        common_pb2.OUTCOME_TIMEOUT,
        CUT_SHORT,
        common_pb2.HITL_DECISION_UNSPECIFIED,
    )
    assert turn.summary.endswith(
        f"(timeout {TURN} s): timeout, model {MODEL}, 25 tokens, 1 tool call: wiki_outline failed"
    )
    assert waiting["data"]["conversations"][0]["waitingForApproval"] is False
    assert (late["ok"], late["message"]) == (False, CUT_SHORT)
    [conversation] = after["data"]["conversations"]
    assert [(t["status"], t["toolCalls"]) for t in conversation["turns"]] == [
        ("timeout", [{"name": "wiki_outline", "outcome": "failed"}])
    ]
    assert waiting["data"]["conversations"][0]["turns"] == conversation["turns"]
    assert [r.outcome for r in turns] == [common_pb2.OUTCOME_OK, common_pb2.OUTCOME_TIMEOUT]
    assert [r.outcome for r in tool_calls] == [common_pb2.OUTCOME_TIMEOUT]
    assert running.catalog.calls == [] and len(running.model.requests) == 2
    # One approval went unanswered (the tool's); the turn's own question is no approval's wait.
    waits = running.gateway.metrics.registry.get_sample_value(
        "saip_gateway_approval_wait_seconds_count", {"decision": "timeout"}
    )
    assert waits == 1.0


async def test_a_2026_turn_nobody_answers_stays_in_its_conversation_as_timed_out_before_the_next_turn(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    """Nobody answers and nobody retries: once the turn's deadline passed, its conversation shows it ended by its
    timeout (what it had, the call at the question failed), and the next turn of the conversation keeps it in the
    history before its own; the trail has each turn once."""
    script = (call("wiki_outline", {"text": "saip"}), say("Another turn."))
    async with stack(nats_server.url, tmp_path, *script) as running:
        async with Client(running.gateway.mcp, mode=MODERN, client_info=CLIENT, elicitation_callback=Person()) as ai:
            asked = await ai.session.call_tool("saip_chat_ask", SHORT, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            await turn_records(running.audit_port, 1)
            swept = envelope(await ai.call_tool("saip_chat_list_conversations", {"turns": 3}))
            [conversation] = swept["data"]["conversations"]
            following = {"prompt": "Another", "conversationId": conversation["conversationId"]}
            nxt = envelope(await ai.call_tool("saip_chat_ask", following))
            later = envelope(await ai.call_tool("saip_chat_list_conversations", {"turns": 3}))
        turns = await turn_records(running.audit_port, 2)

    assert (conversation["turnCount"], conversation["waitingForApproval"]) == (1, False)
    [timed_out] = conversation["turns"]
    assert (timed_out["prompt"], timed_out["status"], timed_out["answer"], timed_out["client"]) == (
        "Outline saip",
        "timeout",
        "",
        "chat-client 1.4",
    )
    assert (timed_out["model"], timed_out["tokens"], timed_out["toolCalls"]) == (
        MODEL,
        25,
        [{"name": "wiki_outline", "outcome": "failed"}],
    )
    assert nxt["ok"] and nxt["warnings"] == [], nxt
    [continued] = later["data"]["conversations"]
    assert continued["turns"] == [timed_out, nxt["data"]]
    assert (continued["turnCount"], continued["lastAnswer"]) == (2, "Another turn.")
    assert [r.outcome for r in turns] == [common_pb2.OUTCOME_OK, common_pb2.OUTCOME_TIMEOUT]
