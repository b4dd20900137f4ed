"""Tutorial 18 end to end, started as `make run` starts it: an AI authors a tool through a real MCP client, tests
it, publishes it with the person's approval at its own client, sees it appear (list_changed), calls it (the tool's
own approval), deletes it; in both protocol eras, with the official Python SDK client and with the MCP Inspector's
`mcpdo`. Then the decline path, the audit it leaves, and the person's side (REST and the command line)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from tests.e2e.real_clients import Mcpdo
from tests.e2e.stack import SAIP, Stack, mcp_client
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
# Its tools, drafts and audit entries are found by their own names (the tail's backlog holds the newest 500), and
# what it leaves published only adds to the tools other modules list with `>=`: it runs on the session's shared
# stack (tests/e2e/conftest.py).
SHARED_STACK = True

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
TOOLS_TOOLS = {
    "saip_tools_list",
    "saip_tools_get",
    "saip_tools_check_risk",
    "saip_tools_get_exposure",
    "saip_tools_save_draft",
    "saip_tools_test",
    "saip_tools_publish",
    "saip_tools_delete",
    "saip_tools_set_exposure",
}


def spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Counts the words of a text.",
        "params": [
            {"name": "text", "description": "The text", "type": "string", "required": True, "testValue": "one two"}
        ],
        "humanInTheLoop": {"mode": "REQUIRED", "promptTemplate": "Count the words of '{text}'"},
        "code": "console.log('counting'); return { words: text.trim().split(/\\s+/).length };",
    }


class Person:
    """Answers the approval questions at the AI's client, as a person clicking Accept (or Decline) would."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.questions: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        content = {"approve": ["run"]} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


@asynccontextmanager
async def watched(stack: Stack, mode: str, person: Person) -> AsyncIterator[tuple[Client, anyio.Event]]:
    """A client of one era that answers as `person`, and an event set on every tools/list_changed."""
    changed = anyio.Event()
    holder = {"event": changed}

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            holder["event"].set()

    async with mcp_client(
        stack.mcp_url, stack.mcp_token, mode=mode, elicitation_callback=person, message_handler=on_message
    ) as client:
        if mode == "legacy":
            yield client, changed
            return
        async with client.listen(tools_list_changed=True) as events, anyio.create_task_group() as group:

            async def forward() -> None:
                async for _event in events:
                    holder["event"].set()

            group.start_soon(forward)
            yield client, changed
            group.cancel_scope.cancel()


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", ERAS)
async def test_tutorial_18_an_ai_authors_tests_publishes_uses_and_deletes_a_tool(stack: Stack, mode: str) -> None:
    name = f"word-count-{'legacy' if mode == 'legacy' else 'modern'}"
    person = Person()
    async with watched(stack, mode, person) as (client, _):
        assert await tool_names(client) >= TOOLS_TOOLS
        guide = await client.read_resource("saip://guide/tool-authoring")
        assert "saip_tools_save_draft" in guide.contents[0].text  # type: ignore[union-attr]

        saved = envelope(await client.call_tool("saip_tools_save_draft", {"spec": spec(name)}))
        assert saved["ok"] and saved["data"]["state"] == "draft"
        tested = envelope(await client.call_tool("saip_tools_test", {"name": name}))
        assert tested["ok"] and tested["data"]["result"] == {"words": 2} and tested["data"]["console"] == ["counting"]
        assert person.questions == []  # drafts and tests of an L0 tool are WRITE steps: nobody is asked
        assert name not in await tool_names(client)

    async with watched(stack, mode, person) as (client, changed):
        published = envelope(await client.call_tool("saip_tools_publish", {"name": name}))
        assert published["ok"], published["message"]
        assert published["message"].startswith(f"Published '{name}': it is served on /mcp now")
        [question] = person.questions
        assert question == (
            f"[DESTRUCTIVE] e2e-client 1.0 wants to run saip_tools_publish: publish '{name}' and serve it on /mcp: "
            "risk L0, network blocked, each call asks the person. Answer within 180 s, or the call is refused."
        )
        with anyio.fail_after(15):
            await changed.wait()
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools[name].description == "Counts the words of a text."
        assert tools[name].input_schema["required"] == ["text"]

        answer = await client.call_tool(name, {"text": "the quick brown fox"})
        assert not answer.is_error
        assert json.loads(answer.content[0].text) == {"words": 4}  # type: ignore[union-attr]
        assert person.questions[-1].startswith(
            f"[risk L0] e2e-client 1.0 wants to run {name}: Count the words of 'the quick brown fox'."
        )

    async with watched(stack, mode, person) as (client, changed):
        deleted = envelope(await client.call_tool("saip_tools_delete", {"name": name}))
        assert deleted["ok"] and deleted["message"] == f"Deleted the published '{name}'."
        assert "it leaves /mcp at once" in person.questions[-1]
        with anyio.fail_after(15):
            await changed.wait()
        assert name not in await tool_names(client)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_declined_publish_is_not_run_and_the_tool_stays_a_draft(stack: Stack, mode: str) -> None:
    name = f"declined-{'legacy' if mode == 'legacy' else 'modern'}"
    declining = Person("decline")
    async with watched(stack, mode, declining) as (client, _):
        await client.call_tool("saip_tools_save_draft", {"spec": spec(name)})
        await client.call_tool("saip_tools_test", {"name": name})
        result = await client.call_tool("saip_tools_publish", {"name": name})
        assert result.is_error
        assert envelope(result)["message"] == (
            "Tool 'saip_tools_publish' was not run: the user declined. Do not retry it for this request."
        )
        got = envelope(await client.call_tool("saip_tools_get", {"name": name}))
        assert got["data"]["state"] == "draft"
        assert name not in await tool_names(client)


async def test_the_calls_leave_audit_entries_with_the_persons_decisions(stack: Stack) -> None:
    person = Person()
    async with watched(stack, "legacy", person) as (client, _):
        await client.call_tool("saip_tools_save_draft", {"spec": spec("audited")})
        await client.call_tool("saip_tools_test", {"name": "audited"})
        await client.call_tool("saip_tools_publish", {"name": "audited"})
        await eventually(lambda: _served(client, "audited"))
        await client.call_tool("audited", {"text": "token=abcd1234 three words"})

    with stack.api() as api:

        def logged(tool: str) -> list[dict[str, Any]]:
            page = api.get("/api/v1/audit/management-log", params={"tool": tool, "limit": 20}).json()["data"]
            return page["entries"]  # type: ignore[no-any-return]

        async def publish_logged() -> list[dict[str, Any]]:
            return [entry for entry in logged("saip_tools_publish") if "'audited'" in entry["summary"]]

        [publish] = await eventually(publish_logged)
        assert (publish["level"], publish["outcome"], publish["approval"]) == ("DESTRUCTIVE", "OK", "approved")
        [saved, *_] = logged("saip_tools_save_draft")
        assert (saved["level"], saved["outcome"], saved["approval"]) == ("WRITE", "OK", None)

        async def tool_call() -> dict[str, Any] | None:
            page = api.get("/api/v1/audit/tool-calls", params={"tool": "audited"}).json()["data"]
            return page["entries"][0] if page["entries"] else None

        call = await eventually(tool_call, within=15)
        tailed = next(e for e in _chained(api) if e["kind"] == "tool" and e["tool"] == "audited")
        assert call | {"kind": "tool"} == tailed
    assert (call["source"], call["outcome"], call["approval"]) == ("authored", "OK", "approved")
    assert "abcd1234" not in call["arguments"] and "token=***" in call["arguments"]

    async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
        read = envelope(await client.call_tool("saip_monitor_tool_calls", {"tool": "audited", "limit": 5}))
    assert read["message"] == "1 tool call, newest first."
    assert read["data"]["entries"] == [call]

    env = {**os.environ, "SAIP_GATEWAY_URL": stack.url, "SAIP_ADMIN_TOKEN": stack.admin_token}
    printed = await anyio.run_process([str(SAIP), "audit", "calls", "--tool", "audited"], env=env, check=False)
    assert printed.returncode == 0, printed.stderr.decode()
    [line] = printed.stdout.decode().splitlines()
    words = line.split()
    at = words.index("audited")
    assert words[at + 1 : at + 3] == ["authored", "OK"] and "approval=approved" in words


async def _served(client: Client, name: str) -> bool:
    return name in await tool_names(client)


def _chained(api: Any) -> list[dict[str, Any]]:
    """Every chained record the audit tail's backlog holds (up to 500), read without following."""
    length = int(api.get("/api/v1/audit/overview").json()["data"]["audit"]["chain"]["length"])
    backlog = max(1, min(length, 500))
    entries = []
    with api.stream("GET", "/api/v1/audit/tail", params={"backlog": backlog}) as response:
        for line in response.iter_lines():
            if line.strip():
                entries.append(json.loads(line))
            if len(entries) >= min(length, backlog):
                break
    return entries


def test_the_person_reaches_the_same_methods_through_rest_and_the_command_line(stack: Stack, tmp_path: Path) -> None:
    env = {**os.environ, "SAIP_GATEWAY_URL": stack.url, "SAIP_ADMIN_TOKEN": stack.admin_token}

    def saip(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SAIP), "tools", *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    spec_file = tmp_path / "cli-words.json"
    spec_file.write_text(json.dumps(spec("cli-words")))
    saved = saip("save", str(spec_file))
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("Created the draft 'cli-words'")
    tested = saip("test", "cli-words")
    assert tested.returncode == 0 and "Local Pass of 'cli-words' passed" in tested.stdout
    published = saip("publish", "cli-words")
    assert published.returncode == 0 and published.stdout.startswith("Published 'cli-words'")
    retested = saip("test", "cli-words")
    assert retested.returncode == 0 and "It is published already: /mcp serves this revision." in retested.stdout
    listed = saip("list")
    assert any(line.split()[:2] == ["cli-words", "published"] for line in listed.stdout.splitlines())
    again = saip("save", str(spec_file))
    assert again.returncode == 1 and "a published tool is not changed by a new draft" in again.stderr
    bundled = saip("delete", "text-stats")
    assert bundled.returncode == 1 and "bundled tools cannot be deleted" in bundled.stderr

    with stack.api() as api:
        risk = api.post("/api/v1/tools/risk", json={"spec": {**spec("risky"), "sandbox": {"networkMode": "open"}}})
        assert risk.status_code == 200 and risk.json()["data"]["risk"] == "L4"
        literal = api.post(
            "/api/v1/tools", json={"spec": {**spec("leaky"), "staticVariables": {"apiKey": "abc123xyz789"}}}
        )
        assert literal.status_code == 400
        assert "Ask the person to add it to the tools secrets file" in literal.json()["message"]
        # The attack of issue 10: a reference to saip's own token, reversed by the code, is refused before any run.
        thief = {**spec("thief"), "staticVariables": {"V": "${SAIP_ADMIN_TOKEN}"}, "code": "return [...V].reverse()"}
        assert api.post("/api/v1/tools", json={"spec": thief}).status_code == 200
        stolen = api.post("/api/v1/tools/thief/test")
        assert stolen.status_code == 400
        assert "${SAIP_ADMIN_TOKEN} is not a secret made available here" in stolen.json()["message"]
        assert stack.admin_token not in stolen.text and stack.admin_token[::-1] not in stolen.text
        assert api.delete("/api/v1/tools/thief").json()["ok"] is True
        assert api.delete("/api/v1/tools/cli-words").json()["ok"] is True


def _approved(mcpdo: Mcpdo, *call: str) -> tuple[str, dict[str, Any]]:
    """A tools/call that waits for the person, answered as the person would: the question, then the result."""
    pending = mcpdo.json("tools/call", *call)["elicitationPending"]
    return pending["message"], mcpdo.json("elicitation/respond", pending["elicitationId"], 'approve:=["run"]')


@pytest.mark.parametrize("era", [pytest.param("legacy", id="2025-11-25"), pytest.param("modern", id="2026-07-28")])
def test_tutorial_18_through_the_inspector_s_mcpdo(stack: Stack, mcpdo: Mcpdo, era: str) -> None:
    name = f"inspector-words-{era}"
    mcpdo.connect(stack.mcp_url, stack.mcp_token, era)
    saved = mcpdo.json("tools/call", "saip_tools_save_draft", "spec:=" + json.dumps(spec(name)))
    assert saved["structuredContent"]["data"]["state"] == "draft"
    tested = mcpdo.json("tools/call", "saip_tools_test", f"name:={name}")
    assert tested["structuredContent"]["data"]["localPass"] is True

    question, published = _approved(mcpdo, "saip_tools_publish", f"name:={name}")
    assert question.startswith("[DESTRUCTIVE] inspector-cli ")
    assert f"publish '{name}' and serve it on /mcp: risk L0, network blocked, each call asks the person" in question
    assert published["structuredContent"]["ok"] is True
    assert name in {tool["name"] for tool in mcpdo.json("tools/list")["tools"]}

    question, answer = _approved(mcpdo, name, "text:=one two three")
    assert question.startswith("[risk L0] inspector-cli ") and "Count the words of 'one two three'" in question
    assert answer["structuredContent"] == {"words": 3}

    _, deleted = _approved(mcpdo, "saip_tools_delete", f"name:={name}")
    assert deleted["structuredContent"]["message"] == f"Deleted the published '{name}'."
    assert name not in {tool["name"] for tool in mcpdo.json("tools/list")["tools"]}
