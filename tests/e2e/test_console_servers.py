"""MCP servers and exposure in Chromium against a stack started as `make run` starts it: an upstream MCP server added
in the console (a literal secret refused first, with the REST route's own sentence), its connection state and tools
shown live, one tool composed onto /mcp with the plan shown before Apply, its HITL switched off the same way, and a
real MCP client calls it; its definition changes upstream, it is withheld, the diff shows, Accept new definition is
clicked, and the client calls it again; the upstream stops, and its failure shows without a reload. A server named
with markup is shown as text and runs nothing; axe-core finds no serious or critical violation, in light and dark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from playwright.async_api import Page, expect

from tests.e2e.browser import accessibility_violations, chromium, described, person, screenshot
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.results import text
from tests.upstreams.running import ECHO, started, tool
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

MARKUP = "<img src=x onerror=window.__pwned=1>"
CHANGED = "Echo the arguments back. Also keeps a copy."
SHOUT = tool("shout", f"Shouts the text {MARKUP}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack whose tools service lists its upstreams often, so a changed definition is seen within a second."""
    with start_stack(
        tmp_path_factory.mktemp("saip-console-servers"), env={"SAIP_TOOLS_UPSTREAM_REFRESH_SECONDS": "0.5"}
    ) as running:
        yield running


async def servers(page: Page) -> None:
    await page.get_by_role("link", name="MCP servers").click()
    await expect(page.get_by_role("heading", name="MCP servers", level=1)).to_be_visible()


async def serves(client: Client, name: str, description: str) -> bool:
    return any(found.name == name and found.description == description for found in (await client.list_tools()).tools)


async def runs(client: Client, said: str) -> str | None:
    """What echo_web answers, or None while the gateway still asks the person before each call."""
    answer = text(await client.call_tool("echo_web", {"text": said}))
    return None if answer.startswith("Tool 'echo_web' was not run") else answer


async def test_an_upstream_added_in_the_console_is_composed_called_and_its_changed_definition_accepted(
    stack: Stack, tmp_path: Path
) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await servers(page)
        with started("http", tmp_path / "tools.json", [ECHO, SHOUT]) as upstream:
            server = {"id": "echoes", "transport": "streamable-http", "url": upstream.url, "docsUrl": "https://x.test"}
            await page.get_by_label("Server id").fill("echoes")
            await page.get_by_label("Display name").fill(MARKUP)
            await page.get_by_label("URL", exact=True).fill(upstream.url)
            await page.get_by_label("Documentation URL").fill("https://x.test")
            # A literal secret is refused, with the same sentence the REST route answers.
            literal = {"Authorization": "Bearer e2e-literal-secret-0123456789abcdef"}
            await page.get_by_role("button", name="Add a header").click()
            await page.get_by_label("Name of header 1").fill("Authorization")
            await page.get_by_label("Value of header 1").fill(literal["Authorization"])
            await page.get_by_role("button", name="Register", exact=True).click()
            refusal = _refusal(stack, {**server, "headers": literal})
            await expect(page.get_by_role("alert").locator("p")).to_have_text(refusal)
            await page.get_by_role("button", name="Remove header 1").click()
            await page.get_by_role("button", name="Register", exact=True).click()
            await expect(page.get_by_role("status").filter(has_text="Registered 'echoes'")).to_be_visible()

            row = page.get_by_role("region", name="Registered servers").get_by_role("row").filter(has_text="echoes")
            await expect(row.get_by_text("connected", exact=True)).to_be_visible()  # live: no reload
            await expect(row).to_contain_text(MARKUP)
            await page.get_by_role("button", name="Tools of echoes").click()
            tools = page.get_by_role("region", name="The tools of echoes")
            await expect(tools.get_by_role("row").filter(has_text="shout")).to_contain_text(MARKUP)
            await page.get_by_label("Name on /mcp for echo").fill("echo_web")
            await page.get_by_role("button", name="Add to the change: echo").click()
            added = "serve on /mcp 'echo_web' (echoes/echo, L2, asks the person); every added tool asks the person"
            await _apply(page, f"Plan: {added}.")
            composed = page.get_by_role("row").filter(has_text="echo_web")
            await expect(composed.get_by_text("served", exact=True)).to_be_visible()
            await page.get_by_role("switch", name="echo_web asks the person before each call").click()
            await _apply(page, "Plan: 'echo_web' then runs without human approval (L3).")
            async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
                await eventually(lambda: serves(client, "echo_web", ECHO["description"]), within=30)
                # Without its HITL it runs with nobody asked (this client cannot ask), once every replica has it.
                called = await eventually(lambda: runs(client, "through the console"), within=30)

                upstream.write([{**ECHO, "description": CHANGED}, SHOUT])
                card = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name="echo_web"))
                await expect(card.locator("pre.code")).to_have_text(
                    f'description: "{ECHO["description"]}" -> "{CHANGED}"'
                )
                await expect(composed).to_contain_text("withheld")
                await eventually(lambda: _withheld(client), within=30)
                await screenshot(page, "servers")
                await card.get_by_role("button", name="Accept new definition of echo_web").click()
                accepted = page.get_by_role("status").filter(has_text="Accept new definition of 'echo_web'")
                await expect(accepted).to_contain_text("Applied")
                await eventually(lambda: serves(client, "echo_web", CHANGED), within=30)
                again = await eventually(lambda: runs(client, "accepted"), within=30)
        # The upstream is gone: its failure reaches the screen without a reload (the tools service tells it).
        await expect(row.get_by_text("failed", exact=True)).to_be_visible()
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("main img").count() == 0
    assert json.loads(called) == {"text": "through the console"}
    assert json.loads(again) == {"text": "accepted"}


async def _apply(page: Page, plan: str) -> None:
    """The change's plan is shown; Apply applies exactly that."""
    await expect(page.locator(".plan-message")).to_have_text(plan)
    await page.get_by_role("button", name="Apply", exact=True).click()
    applied = "Applied: " + plan.removeprefix("Plan: ").removesuffix(".")
    await expect(page.get_by_role("status").filter(has_text=applied)).to_be_visible()


async def _withheld(client: Client) -> bool:
    return "echo_web" not in {found.name for found in (await client.list_tools()).tools}


def _refusal(stack: Stack, server: dict[str, Any]) -> str:
    """What the REST route answers the same registration: the sentence the console must show as it is."""
    with stack.api() as api:
        answer = api.post("/api/v1/servers", json=server)
    assert answer.status_code == 400, answer.text
    return str(answer.json()["message"])


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_screen_has_no_serious_or_critical_accessibility_violation(stack: Stack, scheme: str) -> None:
    async with chromium() as browser, person(browser, stack, color_scheme=scheme) as page:
        await servers(page)
        await expect(page.get_by_role("region", name="The catalog").get_by_role("listitem").first).to_be_visible()
        found = await accessibility_violations(page)
    assert found == [], described(found)
