"""Tutorial 22 end to end, started as `make run` starts it: an AI uses saip's chat as a sub-agent through a real MCP
client, in both protocol eras. The chat's model is the scripted OpenAI-compatible server (tests/model_server.py),
reached at chat.base-url with its key read from the variable `chat.api-key` names; the AI reads the guide, publishes
a tool that asks before each call, hands the chat a turn with it (the question reaches the AI's own client, in the
2026-07-28 era as a question the turn stops at), continues the conversation, and reads the history and the audit
trail; the person reads the same over REST."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.stack import ChatStack, chat_stack, mcp_client
from tests.e2e.test_spine import cli
from tests.e2e.test_tool_studio import Person, envelope, spec
from tests.model_server import MODEL, call, say
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
KEY = "sk-e2e-chat-0123456789"


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatStack]:
    env = {"SAIP_CHAT_API_KEY": "${CHAT_E2E_KEY}", "CHAT_E2E_KEY": KEY}
    with chat_stack(tmp_path_factory.mktemp("saip-home"), env) as running:
        yield running


@pytest.mark.parametrize("mode", ERAS)
async def test_tutorial_22_an_ai_uses_the_chat_as_a_sub_agent(chat: ChatStack, mode: str) -> None:
    stack, model = chat.stack, chat.model
    name = f"word-count-chat-{'legacy' if mode == 'legacy' else 'modern'}"
    person = Person()
    seen = len(model.requests)
    model.steps.extend(
        [
            call(name, {"text": "one two three"}),
            say("The text has 3 words."),
            say("You asked me to count the words of 'one two three'."),
        ]
    )
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode=mode, elicitation_callback=person) as client:
        guide = await client.read_resource("saip://guide/chat")
        assert "saip_chat_ask" in guide.contents[0].text  # type: ignore[union-attr]
        await client.call_tool("saip_tools_save_draft", {"spec": spec(name)})
        await client.call_tool("saip_tools_test", {"name": name})
        published = envelope(await client.call_tool("saip_tools_publish", {"name": name}))
        assert published["ok"], published["message"]
        await eventually(lambda: _served(client, name))

        asked = envelope(
            await client.call_tool("saip_chat_ask", {"prompt": "Count the words of 'one two three'", "tools": [name]})
        )
        assert asked["ok"], asked["message"]
        assert asked["data"]["answer"] == "The text has 3 words."
        assert asked["data"]["toolCalls"] == [{"name": name, "outcome": "ran"}]
        assert person.questions[-1] == (
            f"[risk L0] Chat turn started by this client wants to run a tool. Run '{name}' with "
            '{"text": "one two three"}?'
        )
        conversation = asked["data"]["conversationId"]
        followed = envelope(
            await client.call_tool("saip_chat_ask", {"prompt": "What did I ask?", "conversationId": conversation})
        )
        assert followed["ok"] and followed["data"]["answer"].startswith("You asked me to count")
        listed = envelope(await client.call_tool("saip_chat_list_conversations", {"turns": 2}))

    mine = next(entry for entry in listed["data"]["conversations"] if entry["conversationId"] == conversation)
    assert [turn["prompt"] for turn in mine["turns"]] == ["Count the words of 'one two three'", "What did I ask?"]
    # The tool's result reached the model; the key reached the endpoint from the variable its reference names.
    assert [json.loads(text) for text in model.tool_results(seen + 1)] == [{"words": 3}]
    assert {headers["authorization"] for headers in model.headers[seen:]} == {f"Bearer {KEY}"}

    with stack.api() as api:

        async def turns() -> list[dict[str, Any]]:
            page = api.get("/api/v1/audit/management-log", params={"tool": "saip_chat_ask", "limit": 50}).json()
            return [e for e in page["data"]["entries"] if conversation in e["result"] or name in e["summary"]]

        async def tool_call() -> dict[str, Any] | None:
            page = api.get("/api/v1/audit/tool-calls", params={"tool": name}).json()["data"]
            return page["entries"][0] if page["entries"] else None

        audited = await eventually(turns, within=15)
        assert any(f"model {MODEL}, 50 tokens, 1 tool call: {name} ran" in entry["result"] for entry in audited)
        ran = await eventually(tool_call, within=15)
        assert (ran["outcome"], ran["approval"]) == ("OK", "approved")
        # The person's click counts on the chat side of the HITL meter.
        decisions = api.get("/api/v1/audit/hitl").json()["data"]["decisions"]
        assert decisions["chat"]["approved"] >= 1
        history = api.get("/api/v1/chat/conversations", params={"turns": 2}).json()["data"]["conversations"]
        assert conversation in {entry["conversationId"] for entry in history}


async def _served(client: Any, name: str) -> bool:
    return name in {tool.name for tool in (await client.list_tools()).tools}


def test_the_person_asks_the_chat_from_the_command_line(chat: ChatStack) -> None:
    chat.model.steps.extend([call("word-count-chat-cli", {"text": "x"}), say("I may not run it from here.")])
    asked = cli(chat.stack, "chat", "ask", "Count the words of 'x'")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.splitlines()[0] == "I may not run it from here."
    assert asked.stdout.splitlines()[1].startswith(f"The chat answered (model {MODEL}, 50 tokens, 1 tool call")
    listed = cli(chat.stack, "chat", "conversations")
    assert listed.returncode == 0 and "Count the words of 'x'" in listed.stdout
    unknown = cli(chat.stack, "chat", "ask", "x", "--tool", "saip_tools_list")
    assert unknown.returncode == 1  # a refusal: the REST API's 400, said as every refusal is
    assert unknown.stderr.startswith("Error: saip_ management tools are never available inside a chat turn")
    # The knowledge pipeline option reaches the knowledge service of the stack, which knows no such pipeline.
    sourced = cli(chat.stack, "chat", "ask", "How do I restart the broker?", "--pipeline", "Nope")
    assert sourced.returncode == 1
    assert sourced.stderr.startswith(
        "Error: The knowledge pipeline 'Nope' cannot be this turn's source: no pipeline named 'Nope'"
    )
