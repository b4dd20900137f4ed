"""Tutorial 21 end to end, started as `make run` starts it: an AI builds knowledge from documents through a real MCP
client, searches it, and publishes a knowledge tool with the person's approval; the person deletes a document."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import ClientRequestContext

from tests.e2e.stack import Stack, mcp_client
from tests.e2e.test_spine import cli, envelope
from tests.unit.knowledge.samples import pdf
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

RUNBOOK = """# Broker runbook

Restart the NATS broker with `systemctl restart nats` when clients report stale connections. JetStream keeps the
streams on disk, so nothing is lost; consumers resume from their last acknowledged message.
"""
FAQ = """<html><head><title>Gateway FAQ</title></head><body>
<h1>Approvals</h1><p>Every destructive management call asks the person at the AI's own client before it runs.
An unanswered question times out after the approval wait and the call is refused.</p></body></html>"""
VECTORS = ["Qdrant stores the chunk vectors of every ingested document.", "Local mode keeps them in one folder."]


class Person:
    """The person at the client: answers each approval question (accept with the box ticked, or decline)."""

    def __init__(self) -> None:
        self.questions: list[str] = []
        self.accept = True

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.questions.append(params.message)
        if self.accept:
            return types.ElicitResult(action="accept", content={"approve": ["run"]})
        return types.ElicitResult(action="decline")


async def call(client: Any, tool: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments, **kwargs)
    data = envelope(result)
    assert data["ok"] is not result.is_error
    return data


async def test_tutorial_21_an_ai_builds_searches_and_publishes_knowledge(stack: Stack) -> None:
    root = stack.home / "ingest"
    (root / "runbook.md").write_text(RUNBOOK)
    (root / "faq.html").write_text(FAQ)
    (root / "vectors.pdf").write_bytes(pdf(VECTORS, title="Vector store"))
    person = Person()
    tools_changed = anyio.Event()
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            tools_changed.set()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with mcp_client(
        stack.mcp_url, stack.mcp_token, mode="legacy", elicitation_callback=person, message_handler=on_message
    ) as client:
        guide = (await client.read_resource("saip://guide/knowledge")).contents[0]
        assert isinstance(guide, types.TextResourceContents) and "Paths are explicit" in guide.text
        prompt = await client.get_prompt("saip_knowledge_server", {"topic": "operating saip"})
        first = prompt.messages[0].content
        assert isinstance(first, types.TextContent) and "saip://guide/knowledge" in first.text

        status = await call(client, "saip_knowledge_status", {})
        assert status["data"]["ingestRoots"] == [str(root.resolve())]

        relative = await call(client, "saip_knowledge_ingest_document", {"path": "runbook.md"})
        assert f"absolute path '{root.resolve() / 'runbook.md'}'" in relative["message"]
        private = await call(client, "saip_knowledge_ingest_document", {"url": "http://169.254.169.254/latest"})
        assert "refused by the network guard" in private["message"]

        ingested = await call(
            client,
            "saip_knowledge_ingest_document",
            {"path": str(root / "runbook.md")},
            progress_callback=on_progress,
        )
        assert ingested["data"]["createdPipeline"] is True and ingested["data"]["document"]["chunks"] == 1
        assert [(done, total) for done, total, _ in progress] == [(0, 1), (1, 1)]
        await call(client, "saip_knowledge_ingest_document", {"path": str(root / "faq.html")})
        await call(client, "saip_knowledge_ingest_document", {"path": str(root / "vectors.pdf"), "name": "Vectors"})
        assert person.questions == []  # WRITE steps do not ask under the default approval mode

        found = await call(client, "saip_knowledge_search", {"query": "restart the nats broker"})
        assert found["data"]["results"][0]["document"] == "runbook.md"

        [suggestion] = (await call(client, "saip_knowledge_suggest_tools", {}))["data"]["suggestions"]
        assert suggestion["documents"] == ["faq.html", "runbook.md", "Vectors"]

        person.accept = False
        declined = await call(
            client,
            "saip_knowledge_publish_tool",
            {"name": "ops_answers", "description": suggestion["description"], "pipeline": suggestion["pipeline"]},
        )
        assert declined["message"] == "Tool 'saip_knowledge_publish_tool' was not run: the user declined. " + (
            "Do not retry it for this request."
        )
        person.accept = True
        published = await call(
            client,
            "saip_knowledge_publish_tool",
            {"name": "ops_answers", "description": suggestion["description"], "pipeline": suggestion["pipeline"]},
        )
        assert published["data"]["pipeline"] == "All documents (simple)"
        assert len(person.questions) == 2 and "wants to run saip_knowledge_publish_tool" in person.questions[1]
        with anyio.fail_after(15):
            await tools_changed.wait()

        async def listed() -> types.Tool | None:
            return next((t for t in (await client.list_tools()).tools if t.name == "ops_answers"), None)

        served = await eventually(listed)
        assert served.input_schema["required"] == ["query"]
        assert served.annotations is not None and served.annotations.read_only_hint is True

        answer = await client.call_tool("ops_answers", {"query": "approval question times out"})
        assert not answer.is_error
        results = json.loads(answer.content[0].text)["results"]  # type: ignore[union-attr]
        assert results[0]["document"] == "faq.html" and results[0]["source"] == str((root / "faq.html").resolve())

        before = (await call(client, "saip_knowledge_status", {}))["data"]["chunks"]
        deleted = await call(client, "saip_knowledge_delete_document", {"name": "runbook.md"})
        assert deleted["data"]["chunksDeleted"] == 1 and len(person.questions) == 3
        after = (await call(client, "saip_knowledge_status", {}))["data"]["chunks"]
        assert after == before - 1
        again = await client.call_tool("ops_answers", {"query": "restart the nats broker"})
        assert all(hit["document"] != "runbook.md" for hit in json.loads(again.content[0].text)["results"])  # type: ignore[union-attr]

    with stack.api() as api:
        log = api.get("/api/v1/audit/management-log", params={"tool": "saip_knowledge_publish_tool"}).json()["data"]
        assert [entry["approval"] for entry in log["entries"]] == ["approved", "declined"]
        documents = api.get("/api/v1/knowledge/documents").json()["data"]["documents"]
        assert [doc["name"] for doc in documents] == ["faq.html", "Vectors"]


async def test_a_document_nested_too_deep_is_refused_by_its_rule_never_as_the_service_away(stack: Stack) -> None:
    """5,000 nested arrays or objects: the person gets a 4xx and the AI the refusal, each naming the 64-level rule."""
    root = stack.home / "ingest"
    (root / "arrays.json").write_bytes(b"[" * 5000 + b"]" * 5000)
    (root / "objects.json").write_bytes(b'{"a":' * 5000 + b"1" + b"}" * 5000)
    rule = (
        "is refused: the JSON is nested more than 64 levels deep, which saip does not read; send flatter data (a "
        "list of items rather than items inside items)."
    )
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy", elicitation_callback=Person()) as client:
        for name in ("arrays.json", "objects.json"):
            with stack.api() as api:
                answer = api.post("/api/v1/knowledge/documents", json={"path": str(root / name)})
            assert answer.status_code == 400 and answer.json()["message"] == f"'{name}' {rule}"
            refused = await call(client, "saip_knowledge_ingest_document", {"path": str(root / name)})
            assert (refused["ok"], refused["message"]) == (False, f"'{name}' {rule}")
            assert "not reachable" not in refused["message"]
        listed = await call(client, "saip_knowledge_list_documents", {})
    assert not {"arrays.json", "objects.json"} & {document["name"] for document in listed["data"]["documents"]}


def test_the_person_reaches_the_same_methods_from_the_command_line(stack: Stack) -> None:
    ingested = cli(
        stack, "knowledge", "ingest", "--text", "# Shifts\n\nThe night shift restarts the broker.", "--name", "shifts"
    )
    assert ingested.returncode == 0, ingested.stderr
    found = cli(stack, "knowledge", "search", "night shift", "-p", "All documents (simple)")
    assert found.returncode == 0 and "shifts #0" in found.stdout
    missed = cli(stack, "knowledge", "search", "zebra", "-p", "All documents (simple)")
    assert missed.returncode == 0 and missed.stdout.startswith("0 passages from All documents (simple); try other")
    relative = cli(stack, "knowledge", "ingest", "notes.md")
    assert relative.returncode == 1 and "Paths are explicit" in relative.stderr
    other = cli(stack, "knowledge", "ingest", "ftp://files.example/notes.md")
    assert other.returncode == 1 and "'ftp://files.example/notes.md' is not an http(s) URL" in other.stderr
    status = cli(stack, "knowledge", "status")
    assert status.returncode == 0 and f"Ingest roots: {(stack.home / 'ingest').resolve()}" in status.stdout


async def test_a_sessionless_client_ingests_publishes_and_unpublishes_with_approval(stack: Stack) -> None:
    """The 2026-07-28 era: no back channel, so each approval comes back as a question the client answers on retry."""
    person = Person()
    async with mcp_client(stack.mcp_url, stack.mcp_token, mode="auto", elicitation_callback=person) as client:
        ingested = await call(
            client,
            "saip_knowledge_ingest_document",
            {"text": "# Paging\n\nThe on-call engineer acknowledges a page within five minutes.", "name": "paging"},
        )
        assert ingested["data"]["document"]["chunks"] == 1
        await call(client, "saip_knowledge_apply_pipeline", {"name": "On call", "documents": ["paging"]})
        published = await call(
            client,
            "saip_knowledge_publish_tool",
            {"name": "on_call_answers", "description": "Answers on-call questions.", "pipeline": "On call"},
        )
        assert published["data"]["name"] == "on_call_answers" and len(person.questions) == 1

        async def served() -> bool:
            return "on_call_answers" in {tool.name for tool in (await client.list_tools()).tools}

        await eventually(served)
        answer = await client.call_tool("on_call_answers", {"query": "acknowledge a page", "topK": 1})
        [result] = json.loads(answer.content[0].text)["results"]  # type: ignore[union-attr]
        assert result["document"] == "paging"
        await call(client, "saip_knowledge_unpublish_tool", {"name": "on_call_answers"})
        assert len(person.questions) == 2

        async def gone() -> bool:
            return "on_call_answers" not in {tool.name for tool in (await client.list_tools()).tools}

        await eventually(gone)
