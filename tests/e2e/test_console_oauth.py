"""An OAuth client nobody here wrote connects through the console's consent page: `mcp-remote` (npm) is started as an
MCP client starts it, prints the authorization URL where it would open a browser, and Chromium follows it: the person
signs in to the console, reads who asks, gives the management grant, and the browser goes back to mcp-remote, which
finishes the sign-in. Its MCP client then calls a published tool and a management tool with its approval, both on
the trail under the client's own credential; a denied sign-in reaches the client as the spec's error; and the person
makes a named token for a client that takes a header, and revokes it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.async_api import Page, expect

from saip.common.natsd import free_port
from tests.e2e.browser import chromium, person, screenshot
from tests.e2e.real_clients import CLIENTS, NODE_BIN
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.e2e.test_console_shipyard import published
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

MCP_REMOTE = CLIENTS / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
AUTHORIZE = re.compile(r"Please authorize this client by visiting:\s*(\S+)")
WAIT_MS = 60_000  # a sign-in on a loaded machine: mcp-remote's registration, the consent, its token exchange


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack that is the OAuth authorization server of its own /mcp."""
    with start_stack(tmp_path_factory.mktemp("saip-oauth"), env={"SAIP_OAUTH_ENABLED": "true"}) as running:
        yield running


def authorization_url(log: Path) -> str | None:
    """The URL mcp-remote asks its person to open, once it has printed it."""
    found = AUTHORIZE.search(log.read_text(errors="replace")) if log.exists() else None
    return found.group(1) if found else None


@asynccontextmanager
async def mcp_remote(stack: Stack, home: Path, log: IO[str]) -> AsyncIterator[Client]:
    """mcp-remote as an MCP client starts it (a command on stdio), its sign-in state in `home`; the browser it would
    open is a no-op (BROWSER), since the test's Chromium follows the URL it prints."""
    await anyio.Path(home).mkdir(parents=True, exist_ok=True)
    server = StdioServerParameters(
        command=str(NODE_BIN / "node"),
        args=[str(MCP_REMOTE), stack.mcp_url, str(free_port()), "--allow-http", "--transport", "http-only"],
        env={"HOME": str(home), "MCP_REMOTE_CONFIG_DIR": str(home), "BROWSER": "/bin/true", "PATH": str(NODE_BIN)},
        cwd=home,
    )
    async with Client(stdio_client(server, errlog=log), mode="legacy") as client:
        yield client


async def consent(page: Page, stack: Stack, url: str, *, approve: bool) -> None:
    """What the person does with the URL: the console's sign-in (the browser has no session yet), then its consent."""
    await page.goto(url)
    await page.get_by_label("Admin token").fill(stack.admin_token)
    await page.get_by_role("button", name="Sign in").click()
    asking = page.get_by_role("heading", name="asks to connect")
    await expect(asking).to_be_visible()
    await expect(page.locator("section.card")).to_contain_text("localhost")  # where the answer goes
    if approve:
        await page.get_by_label(re.compile("management surface")).check()
        await screenshot(page, "consent")
        await page.get_by_role("button", name="Approve").click()
    else:
        await page.get_by_role("button", name="Deny").click()
    # The browser goes back to mcp-remote's own callback on this machine.
    await page.wait_for_url(re.compile(r"/oauth/callback\?"), timeout=WAIT_MS)


async def test_mcp_remote_signs_in_through_the_consent_page_and_calls_under_its_own_credential(
    stack: Stack, tmp_path: Path
) -> None:
    published(stack, "remote_adder")
    log = tmp_path / "mcp-remote.log"
    with log.open("w") as written, anyio.fail_after(180):
        async with chromium() as browser, anyio.create_task_group() as group:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(WAIT_MS)
            connected: list[Client] = []
            done = anyio.Event()

            async def client_side() -> None:
                async with mcp_remote(stack, tmp_path / "home", written) as client:
                    connected.append(client)
                    await done.wait()

            group.start_soon(client_side)
            url = await eventually(lambda: authorization_url(log), within=60)
            await consent(page, stack, url, approve=True)
            client = (await eventually(lambda: connected, within=60))[0]
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"remote_adder", "saip_monitor_overview"} <= names  # the management grant
            added = await client.call_tool("remote_adder", {"a": 2, "b": 3})
            assert isinstance(added, types.CallToolResult) and not added.is_error
            overview = envelope(await client.call_tool("saip_monitor_overview", {}))
            assert overview["ok"] is True
            done.set()
    with stack.api() as api:

        def counted() -> list[dict[str, Any]]:  # each replica writes its counts every few seconds
            listed = api.get("/api/v1/clients").json()["data"]["clients"]
            return [entry for entry in listed if entry["kind"] == "oauth" and entry["callsLastHour"] >= 2]

        oauth = await eventually(counted, within=30)
        assert len(oauth) == 1 and oauth[0]["grant"] == "manage"
        log_entries = api.get("/api/v1/audit/management-log", params={"tool": "saip_monitor_overview"}).json()
    credential = log_entries["data"]["entries"][0]["credential"]
    assert credential == {"id": oauth[0]["id"], "kind": "oauth", "name": oauth[0]["name"]}


async def test_a_denied_sign_in_reaches_mcp_remote_as_access_denied(stack: Stack, tmp_path: Path) -> None:
    log = tmp_path / "mcp-remote.log"
    with log.open("w") as written, anyio.fail_after(180):
        async with chromium() as browser, anyio.create_task_group() as group:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(WAIT_MS)

            async def client_side() -> None:
                # mcp-remote ends once its sign-in is refused, which closes its client's connection.
                with pytest.RaisesGroup(pytest.RaisesGroup(pytest.RaisesExc(MCPError, match="Connection closed"))):
                    async with mcp_remote(stack, tmp_path / "home", written):
                        pass

            group.start_soon(client_side)
            url = await eventually(lambda: authorization_url(log), within=60)
            await consent(page, stack, url, approve=False)
            # The spec's error, with the issuer (RFC 9207), and mcp-remote's own page saying it failed.
            assert "error=access_denied" in page.url and "iss=" in page.url
            await expect(page.locator("body")).to_contain_text("Authorization failed")


async def test_the_person_makes_a_named_token_in_the_console_and_revokes_it(stack: Stack) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Clients").click()
        clients = page.get_by_role("table", name="Clients that can call /mcp")
        await expect(clients.get_by_role("row").filter(has_text="shared token")).to_be_visible()
        await page.get_by_label("Who it is for").fill("nightly <b>cron</b>")
        await page.get_by_role("button", name="Make the token").click()
        token = (await page.get_by_label("the named token").text_content() or "").strip()
        assert len(token) >= 32
        row = clients.get_by_role("row").filter(has_text="nightly <b>cron</b>")  # its name, as text
        await expect(row).to_contain_text("published tools")
        await screenshot(page, "clients")
        async with mcp_client(stack.mcp_url, token) as client:  # the token works at once
            assert "saip_monitor_overview" not in {tool.name for tool in (await client.list_tools()).tools}
        page.on("dialog", lambda dialog: dialog.accept())
        await row.get_by_role("button", name="Revoke nightly <b>cron</b>").click()
        await expect(row).to_have_count(0)
    async with httpx.AsyncClient(timeout=10) as http:
        refused = await http.post(stack.mcp_url, json={}, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401  # on every replica now
