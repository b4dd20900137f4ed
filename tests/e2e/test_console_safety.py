"""The console's Safety screen in Chromium, against a stack as `make run` starts it: the management log updates
while an AI calls (no reload), a call opens to its masked arguments, and the audit chain verifies."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from tests.e2e.browser import chromium, person, screenshot
from tests.e2e.stack import Stack, mcp_client

pytestmark = pytest.mark.e2e


async def test_the_management_log_updates_while_an_ai_calls(stack: Stack) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Safety").click()
        calls = page.get_by_role("table", name="Management tool calls, newest first")
        await expect(page.get_by_role("heading", name="Management tool calls")).to_be_visible()
        async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
            await client.call_tool("saip_knowledge_search", {"query": "password=hunter2 broker"})
            row = calls.get_by_role("row").filter(has_text="saip_knowledge_search")
            await expect(row.first).to_contain_text("e2e-client 1.0")  # arrived live, with no reload
            await client.call_tool("saip_monitor_overview", {})
            await expect(calls.get_by_role("row").filter(has_text="saip_monitor_overview").first).to_be_visible()
        await row.first.get_by_role("button").click()
        await expect(page.locator("#call-detail")).to_contain_text("saip_knowledge_search")
        arguments = page.locator("section.card pre.code").first
        await expect(arguments).to_contain_text("password=***")
        await expect(arguments).not_to_contain_text("hunter2")
        await page.get_by_role("button", name="Verify the chain").click()
        await expect(page.get_by_text("intact", exact=True)).to_be_visible()
        await screenshot(page, "safety")
