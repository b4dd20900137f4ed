"""The tools area through a real gateway and a real tools service on a real NATS: the approval plans read from the
service (high risk, approval off, exact summaries), names served elsewhere, the guides, examples and the prompt."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.gateway.surface.registry import ServedSet, ServedTool
from tests.integration.answers import Person
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import running_tools
from tests.results import envelope
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="area-client", version="3.1")
TOKEN = "t" * 24


@asynccontextmanager
async def area(nats_url: str, home: Path, **overrides: Any) -> AsyncIterator[Gateway]:
    async with running_tools(nats_url) as tools:
        settings = replica_settings(
            home, nats_url, "one", tools_addr=f"127.0.0.1:{tools.port}", mcp_server_auth_token=TOKEN, **overrides
        )
        gateway = Gateway(settings)
        async with gateway.running():
            await eventually(lambda: gateway.registry.tool("saip_tools_publish") is not None)
            yield gateway


async def test_a_sandbox_above_the_baseline_makes_the_test_a_question(nats_server: LocalNats, tmp_path: Path) -> None:
    fetcher = document("fetcher", sandbox={"networkMode": "allowlist", "hostsAllow": ["api.example.com"]})
    person = Person()
    async with (
        area(nats_server.url, tmp_path) as gateway,
        Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client,
    ):
        saved = envelope(await client.call_tool("saip_tools_save_draft", {"spec": fetcher}))
        assert saved["data"]["risk"] == "L3" and saved["data"]["asksPerson"] is True
        tested = envelope(await client.call_tool("saip_tools_test", {"name": "fetcher"}))
    assert tested["ok"], tested["message"]
    assert person.questions == [
        "[WRITE] area-client 3.1 wants to run saip_tools_test: run 'fetcher' in the sandbox with its declared test "
        "values (its Local Pass): risk L3, network allowlist (api.example.com). Answer within 180 s, or the call is "
        "refused."
    ]


async def test_a_publish_that_weakens_call_approval_is_refused_when_approval_is_off(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    unguarded = document("unguarded", sandbox={"networkMode": "open"}, humanInTheLoop={"mode": "DISABLED"})
    async with (
        area(nats_server.url, tmp_path, management_approval="none") as gateway,
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        await client.call_tool("saip_tools_save_draft", {"spec": unguarded})
        risk = envelope(await client.call_tool("saip_tools_check_risk", {"name": "unguarded"}))
        published = envelope(await client.call_tool("saip_tools_publish", {"name": "unguarded"}))
    assert (risk["data"]["risk"], risk["data"]["weakensApproval"]) == ("L4", True)
    assert published["message"] == (
        "Tool 'saip_tools_publish' was not run: this is a high-risk action and needs a human decision, but approval "
        "is disabled (management.approval=none). Ask the user to run it from the app."
    )


async def test_a_name_another_source_serves_cannot_be_published(nats_server: LocalNats, tmp_path: Path) -> None:
    async with area(nats_server.url, tmp_path, management_approval="none") as gateway:
        taken = ServedTool(types.Tool(name="lookup", input_schema={"type": "object"}), call=None)  # type: ignore[arg-type]
        gateway.registry.replace("published:knowledge", ServedSet(tools={"lookup": taken}))
        async with Client(gateway.mcp, mode="auto", client_info=CLIENT) as client:
            await client.call_tool("saip_tools_save_draft", {"spec": document("lookup")})
            await client.call_tool("saip_tools_test", {"name": "lookup"})
            refused = envelope(await client.call_tool("saip_tools_publish", {"name": "lookup"}))
            ghost = envelope(await client.call_tool("saip_tools_publish", {"name": "ghost"}))
    assert refused["message"] == (
        "'lookup' is already served on /mcp by another source; publish the tool under another name."
    )
    assert ghost["message"] == "No tool named 'ghost'. Call saip_tools_list for the tools there are."


async def test_the_guides_examples_and_prompt_teach_the_procedure(nats_server: LocalNats, tmp_path: Path) -> None:
    async with (
        area(nats_server.url, tmp_path) as gateway,
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        resources = {str(resource.uri) for resource in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        examples = (await client.read_resource("saip://guide/tool-authoring/examples")).contents[0]
        example = (await client.read_resource("saip://examples/csv-to-json")).contents[0]
        prompt = await client.get_prompt("saip_create_tool", {"goal": "count words"})
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("saip://examples/adder")
    assert str(unknown.value) == "No tool named 'adder'. Call saip_tools_list for the tools there are."
    assert {
        "saip://guide/tool-authoring",
        "saip://guide/tool-authoring/runtime",
        "saip://guide/tool-authoring/sandbox",
        "saip://guide/tool-authoring/testing",
        "saip://guide/tool-authoring/mistakes",
        "saip://guide/tool-authoring/examples",
    } <= resources
    assert "saip://examples/{name}" in templates
    assert isinstance(examples, types.TextResourceContents)
    assert "`saip://examples/csv-to-json`" in examples.text
    assert isinstance(example, types.TextResourceContents)
    assert json.loads(example.text)["name"] == "csv-to-json"
    ask, guide = prompt.messages
    assert isinstance(ask.content, types.TextContent) and "count words" in ask.content.text
    assert isinstance(guide.content, types.EmbeddedResource)
    assert str(guide.content.resource.uri) == "saip://guide/tool-authoring"
    assert "## The procedure" in guide.content.resource.text  # type: ignore[union-attr]


async def test_exposing_a_tool_at_l4_asks_and_names_its_risk(nats_server: LocalNats, tmp_path: Path) -> None:
    roaming = document("roaming", sandbox={"networkMode": "open"})
    person = Person()
    async with (
        area(nats_server.url, tmp_path) as gateway,
        Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client,
    ):
        await client.call_tool("saip_tools_save_draft", {"spec": roaming})
        tested = envelope(await client.call_tool("saip_tools_test", {"name": "roaming"}))
        published = envelope(await client.call_tool("saip_tools_publish", {"name": "roaming"}))
        exposed = envelope(
            await client.call_tool("saip_tools_set_exposure", {"autoExpose": False, "tools": ["roaming"]})
        )
    assert tested["ok"] and published["ok"] and exposed["ok"], (tested, published, exposed)
    assert person.questions[-1] == (
        "[DESTRUCTIVE] area-client 3.1 wants to run saip_tools_set_exposure: serve published tools only when listed; "
        "also serve roaming; serves 'roaming' (L4) at risk L4 or above. Answer within 180 s, or the call is refused."
    )


async def test_the_listing_counts_its_tools_in_words(nats_server: LocalNats, tmp_path: Path) -> None:
    async with (
        area(nats_server.url, tmp_path, management_approval="none") as gateway,
        Client(gateway.mcp, mode="auto", client_info=CLIENT) as client,
    ):
        await client.call_tool("saip_tools_save_draft", {"spec": document("adder")})
        one = envelope(await client.call_tool("saip_tools_list", {}))
        await client.call_tool("saip_tools_save_draft", {"spec": document("subtracter")})
        two = envelope(await client.call_tool("saip_tools_list", {}))
    assert one["message"] == "1 tool, 0 served on /mcp: adder (draft, L0)."
    assert two["message"].startswith("2 tools, 0 served on /mcp: ")
