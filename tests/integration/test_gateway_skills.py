"""The guides as Agent Skills through a real gateway over HTTP, with a real tools service on a real NATS.

The client that checks them is one nobody here wrote: the MCP Inspector's `mcpdo` (2.12.0, tests/clients), whose
`skills/list --verify` and `skills/get --verify` run SEP-2640's checks (names, URIs, a complete manifest, every
file read and its digest and size compared, the frontmatter compared field by field), in both protocol eras. The MCP
SDK's own client, which has no skills methods yet, reads the texts. mcpdo is a process the test waits on, so it runs
in a worker thread while the gateway serves on the test's event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from saip.common.http_serving import HttpServer, listening
from saip.common.natsd import LocalNats
from saip.gateway.app import create_app
from saip.gateway.server import Gateway
from saip.gateway.surface.skills import frontmatter_block
from tests.e2e.real_clients import Mcpdo, installed
from tests.integration.gateways import replica_settings
from tests.integration.tools_support import running_tools
from tests.skills import frontmatter, got, listed, read

pytestmark = pytest.mark.integration

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("modern", id="2026-07-28")]
SDK_MODES = {"legacy": "legacy", "modern": "auto"}
# Every area with a guide is registered: the tools service runs; knowledge and shipyard are never called (their
# guides are texts), so their addresses answer nothing.
NOWHERE = "127.0.0.1:1"
GUIDES = ["chat", "knowledge", "proxy", "risk-levels", "shipyard", "tool-authoring"]
PAGES = ["examples", "mistakes", "runtime", "sandbox", "testing"]


@dataclass
class Served:
    gateway: Gateway
    url: str


@asynccontextmanager
async def served(nats_url: str, home: Path, **overrides: Any) -> AsyncIterator[Served]:
    """The gateway's HTTP app, as `saip run` serves it, on a free loopback port."""
    async with running_tools(nats_url) as tools:
        settings = replica_settings(
            home,
            nats_url,
            "one",
            tools_addr=f"127.0.0.1:{tools.port}",
            knowledge_addr=NOWHERE,
            shipyard_addr=NOWHERE,
            **overrides,
        )
        gateway = Gateway(settings)
        with listening("127.0.0.1", 0, "free a port") as sock:
            server = HttpServer(uvicorn.Config(create_app(gateway), log_config=None, access_log=False, lifespan="on"))
            async with anyio.create_task_group() as group:
                group.start_soon(server.serve, [sock])
                await server.listening.wait()
                yield Served(gateway, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp")
                server.should_exit = True


async def off_loop(work: Callable[[], Any]) -> Any:
    return await anyio.to_thread.run_sync(work)


@asynccontextmanager
async def inspector(home: Path) -> AsyncIterator[Mcpdo]:
    """A private mcpdo (`real_clients.private_mcpdo`) whose daemon starts and stops off the loop too."""
    assert installed(), "the npm test clients are missing: run `make install`"
    mcpdo = await off_loop(lambda: Mcpdo(home))
    try:
        yield mcpdo
    finally:
        await off_loop(mcpdo.stop)


def verified(reports: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each skill's verified files by its name, once every report says it passed with no issue."""
    for report in reports:
        assert (report["ok"], report["outcome"], report["conformance"], report["frontmatter"]) == (
            True,
            "verified",
            [],
            [],
        ), report
        for file in report["files"]:
            assert file["status"] == "verified", file
            assert (file["actualDigest"], file["actualSize"]) == (file["expectedDigest"], file["expectedSize"])
    return {report["name"]: report["files"] for report in reports}


@pytest.mark.parametrize("era", ERAS)
async def test_the_inspector_verifies_every_guide_as_a_skill(nats_server: LocalNats, tmp_path: Path, era: str) -> None:
    token = "t" * 40
    async with (
        served(nats_server.url, tmp_path, mcp_server_auth_token=token) as gateway,
        inspector(tmp_path / "mcpdo") as mcpdo,
    ):
        await off_loop(lambda: mcpdo.connect(gateway.url, token, era))
        every = await off_loop(lambda: mcpdo.json("skills/list", "--verify"))
        one = await off_loop(lambda: mcpdo.json("skills/get", "skill://saip-tool-authoring/SKILL.md", "--verify"))
        unknown = await off_loop(lambda: mcpdo.error("skills/get", "skill://saip-tools/SKILL.md"))
    files = verified(every)
    assert sorted(files) == [f"saip-{guide}" for guide in GUIDES]
    assert [file["uri"] for file in files["saip-tool-authoring"]] == [
        "skill://saip-tool-authoring/SKILL.md",
        *(f"skill://saip-tool-authoring/references/{page}.md" for page in PAGES),
    ]
    assert verified(one) == {"saip-tool-authoring": files["saip-tool-authoring"]}
    assert unknown["message"] == (
        "No skill is served at skill://saip-tools/SKILL.md. Call skills/list for the skills served now."
    )


@pytest.mark.parametrize("era", ERAS)
async def test_each_skill_file_is_its_guide_s_text(nats_server: LocalNats, tmp_path: Path, era: str) -> None:
    token = "t" * 40
    async with (
        served(nats_server.url, tmp_path, mcp_server_auth_token=token) as gateway,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(gateway.url, http_client=http), mode=SDK_MODES[era]) as client,
    ):
        for entry in (await listed(client)).skills:
            slug = entry.frontmatter["name"].removeprefix("saip-")
            skill = (await got(client, entry.uri)).skill
            assert skill == entry
            skill_md = await read(client, entry.uri)
            guide = await read(client, f"saip://guide/{slug}")
            assert skill_md == frontmatter_block(entry.frontmatter["name"], entry.frontmatter["description"]) + guide
            assert frontmatter(skill_md) == (entry.frontmatter, guide)
            for file in skill.resources[1:]:
                page = file.uri.removeprefix(f"skill://saip-{slug}/references/").removesuffix(".md")
                assert await read(client, file.uri) == await read(client, f"saip://guide/{slug}/{page}")


async def test_the_skills_leave_with_the_token(nats_server: LocalNats, tmp_path: Path) -> None:
    async with served(nats_server.url, tmp_path) as gateway, inspector(tmp_path / "mcpdo") as mcpdo:
        token = await gateway.gateway.token_service.rotate(created_by="test")
        await off_loop(lambda: mcpdo.connect(gateway.url, token, "legacy"))
        before = await off_loop(lambda: mcpdo.json("skills/list"))
        await gateway.gateway.token_service.remove()
        # No token: /mcp is open and serves the published tools only; the client's stale header is not checked.
        after = await off_loop(lambda: mcpdo.json("skills/list"))
        gone = await off_loop(lambda: mcpdo.error("skills/get", "skill://saip-proxy/SKILL.md"))
    assert len(before["skills"]) == len(GUIDES)
    assert after["skills"] == []
    assert gone["message"] == (
        "No skill is served at skill://saip-proxy/SKILL.md. Call skills/list for the skills served now."
    )


async def test_no_skill_is_served_with_management_disabled(nats_server: LocalNats, tmp_path: Path) -> None:
    token = "t" * 40
    async with (
        served(nats_server.url, tmp_path, mcp_server_auth_token=token, management_enabled=False) as gateway,
        inspector(tmp_path / "mcpdo") as mcpdo,
    ):
        await off_loop(lambda: mcpdo.connect(gateway.url, token, "modern"))
        listing = await off_loop(lambda: mcpdo.json("skills/list"))
        assert gateway.gateway.registrar.status.reason == "disabled by management.enabled=false"
    assert listing["skills"] == []
