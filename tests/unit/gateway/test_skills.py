"""The guides as Agent Skills (SEP-2640) through the MCP SDK's in-process client, in both protocol eras: the entries'
frontmatter, digests and sizes against what resources/read answers, the SEP's errors, and the skills going away with
the management surface. The real clients' checks are in tests/integration/test_gateway_skills.py."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from saip.gateway.areas.expose.contribution import ExposeArea
from saip.gateway.areas.expose.contribution import guide_text as expose_guide
from saip.gateway.areas.tools.contribution import ToolsArea
from saip.gateway.areas.tools.contribution import guide_text as tools_guide
from saip.gateway.config import GatewaySettings
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.server import Gateway
from saip.gateway.surface.skills import EXTENSION, frontmatter_block, guide_skills
from saip.v1 import tools_pb2
from tests.skills import frontmatter, got, listed, read
from tests.unit.gateway.probe import SEALING_KEY, Harness, harness

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
PROXY = "skill://saip-proxy/SKILL.md"
AUTHORING = "skill://saip-tool-authoring/SKILL.md"


class BundledTools:
    """The tools service as the examples page reads it (a hand-written fake of its client): the bundled tools, or
    the service unreachable."""

    def __init__(self) -> None:
        self.reachable = True

    async def list_tools(self, include_bundled: bool = False) -> list[tools_pb2.ToolSummary]:
        if not self.reachable:
            raise ServiceUnavailable("tools", "connection refused")
        return [tools_pb2.ToolSummary(name="weather", description="The forecast", source=tools_pb2.TOOL_SOURCE_BUNDLED)]


def guides(tmp_path: Path, tools: BundledTools | None = None) -> Harness:
    """The probe tools with two real areas' guides: expose's (proxy, risk levels) and tools' (tool authoring, with its
    pages, one of which lists the bundled tools the tools service has)."""
    return harness(tmp_path, others=[ExposeArea(None, set), ToolsArea(tools or BundledTools(), set)])  # type: ignore[arg-type]


def test_every_area_s_guide_makes_a_skill_the_agent_skills_rules_accept() -> None:
    gateway = Gateway(GatewaySettings.load(admin_token="a" * 40, approval_sealing_key=SEALING_KEY))
    resources = {resource.uri: resource for area in gateway.areas for resource in area.contribution.resources()}
    skills = guide_skills(resources).values()
    assert sorted(skill.name for skill in skills) == [
        "saip-chat",
        "saip-knowledge",
        "saip-proxy",
        "saip-risk-levels",
        "saip-shipyard",
        "saip-tool-authoring",
    ]
    for skill in skills:
        # The Agent Skills specification's name and description fields.
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", skill.name) and len(skill.name) <= 64
        assert 0 < len(skill.description) <= 1024


@pytest.mark.parametrize("mode", ERAS)
async def test_every_guide_is_a_skill_whose_entry_describes_the_bytes_served(tmp_path: Path, mode: str) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server, mode=mode) as client:
        result = await listed(client)
        entries = {entry.uri: entry for entry in result.skills}
        assert sorted(entries) == [PROXY, "skill://saip-risk-levels/SKILL.md", AUTHORING]
        for entry in entries.values():
            text = await read(client, entry.uri)
            assert frontmatter(text)[0] == entry.frontmatter
            assert entry.uri.split("/")[-2] == entry.frontmatter["name"]
            assert entry.resources[0].uri == entry.uri
            for file in entry.resources:
                data = (await read(client, file.uri)).encode()
                assert (file.digest, file.size) == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        listed_resources = {resource.uri: resource for resource in (await client.list_resources()).resources}
    assert [file.uri.removeprefix("skill://saip-tool-authoring/") for file in entries[AUTHORING].resources] == [
        "SKILL.md",
        "references/examples.md",
        "references/mistakes.md",
        "references/runtime.md",
        "references/sandbox.md",
        "references/testing.md",
    ]
    assert entries[PROXY].frontmatter == {
        "name": "saip-proxy",
        "description": "Choosing and combining upstream tools: register, preview the risk, expose with HITL, call "
        "through saip, and what to do when a definition changes. Read it before the saip_mcp_* and saip_expose_* "
        "tools.",
    }
    skill_md = listed_resources[PROXY]
    assert (skill_md.name, skill_md.mime_type) == ("saip-proxy", "text/markdown")
    assert skill_md.description == entries[PROXY].frontmatter["description"]
    assert "skill://saip-tool-authoring/references/runtime.md" not in listed_resources  # its entry lists it


async def test_a_skill_s_files_are_the_guide_s_texts(tmp_path: Path) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server) as client:
        skill_md = await read(client, PROXY)
        guide = await read(client, "saip://guide/proxy")
        runtime = await read(client, "skill://saip-tool-authoring/references/runtime.md")
        examples = await read(client, "skill://saip-tool-authoring/references/examples.md")
        examples_page = await read(client, "saip://guide/tool-authoring/examples")
    assert guide == expose_guide("proxy.md")
    assert skill_md == frontmatter_block("saip-proxy", frontmatter(skill_md)[0]["description"]) + guide
    assert frontmatter(skill_md)[1] == guide
    assert runtime == tools_guide("runtime")
    assert examples == examples_page and "- `saip://examples/weather`: The forecast" in examples


@pytest.mark.parametrize("mode", ERAS)
async def test_skills_get_answers_one_entry_and_the_sep_s_error_for_any_other_uri(tmp_path: Path, mode: str) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server, mode=mode) as client:
        one = await got(client, PROXY)
        [entry] = [entry for entry in (await listed(client)).skills if entry.uri == PROXY]
        for uri in ("saip://guide/proxy", "skill://saip-proxy/references/none.md", "skill://saip-chat/SKILL.md"):
            with pytest.raises(MCPError) as refused:
                await got(client, uri)
            assert refused.value.code == types.INVALID_PARAMS
            assert refused.value.message == f"No skill is served at {uri}. Call skills/list for the skills served now."
    assert one.skill == entry


@pytest.mark.parametrize(("mode", "cached"), [(LEGACY, None), (MODERN, (0, "private"))])
async def test_only_2026_07_28_answers_carry_cache_hints(tmp_path: Path, mode: str, cached: Any) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server, mode=mode) as client:
        listing = await listed(client)
        one = await got(client, PROXY)
        capabilities = client.server_capabilities
    assert (listing.ttl_ms, listing.cache_scope) == (one.ttl_ms, one.cache_scope) == (cached or (None, None))
    if mode == MODERN:  # server/discover; the 2025-11-25 initialize is read by a client of that era (integration)
        assert capabilities.extensions == {EXTENSION: {}}


async def test_a_cursor_skills_list_never_gave_is_refused(tmp_path: Path) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    async with Client(h.server) as client:
        with pytest.raises(MCPError) as refused:
            await listed(client, cursor="page-2")
    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.message == "skills/list answers in one page and gave no cursor; call it without one."


async def test_a_skill_whose_service_is_unreachable_is_left_out_and_get_says_why(tmp_path: Path) -> None:
    tools = BundledTools()
    h = guides(tmp_path, tools)
    await h.registrar.refresh()
    tools.reachable = False
    async with Client(h.server) as client:
        uris = [entry.uri for entry in (await listed(client)).skills]
        with pytest.raises(MCPError) as failed:
            await got(client, AUTHORING)
    assert uris == [PROXY, "skill://saip-risk-levels/SKILL.md"]
    assert failed.value.code == types.INTERNAL_ERROR
    assert failed.value.message == (
        "The tools service is not reachable right now (connection refused); try again shortly."
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_the_skills_go_away_with_the_surface_and_the_client_is_told(tmp_path: Path, mode: str) -> None:
    h = guides(tmp_path)
    await h.registrar.refresh()
    told = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            told.set()

    async with h.delivering(), Client(h.server, mode=mode, message_handler=on_message) as client:
        assert len((await listed(client)).skills) == 3
        h.token["set"] = False
        if mode == MODERN:  # told on its listen stream
            async with client.listen(resources_list_changed=True) as subscription:
                await h.registrar.refresh()
                with anyio.fail_after(5):
                    async for event in subscription:
                        assert type(event).__name__ == "ResourcesListChanged"
                        told.set()
                        break
        else:
            await h.registrar.refresh()
        with anyio.fail_after(5):
            await told.wait()
        assert (await listed(client)).skills == []
        with pytest.raises(MCPError) as gone:
            await got(client, PROXY)
        with pytest.raises(MCPError) as unreadable:
            await read(client, PROXY)
        resources = [resource.uri for resource in (await client.list_resources()).resources]
    assert gone.value.code == unreadable.value.code == types.INVALID_PARAMS
    assert not [uri for uri in resources if uri.startswith("skill://")]


async def test_no_skill_is_served_when_management_is_disabled(tmp_path: Path) -> None:
    h = harness(tmp_path, enabled=False, others=[ExposeArea(None, set)])  # type: ignore[arg-type]
    status = await h.registrar.refresh()
    async with Client(h.server) as client:
        assert (await listed(client)).skills == []
        assert client.server_capabilities.extensions == {EXTENSION: {}}
    assert status.reason == "disabled by management.enabled=false"
    assert h.registry.skills() == []
