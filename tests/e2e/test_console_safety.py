"""The console's Safety screen in Chromium, against a stack as `make run` starts it: the management log updates
while an AI calls (no reload), a call opens to its masked arguments and its trace, the person's own change from the
console is on the same trail, the filtered range exports as JSON lines, and the audit chain verifies."""

from __future__ import annotations

import json
from pathlib import Path

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
        detail = page.locator("#call-detail").locator("xpath=..")
        await expect(detail).to_contain_text("saip_knowledge_search")
        arguments = detail.locator("pre.code").first
        await expect(arguments).to_contain_text("password=***")
        await expect(arguments).not_to_contain_text("hunter2")
        await detail.get_by_role("link").click()  # its trace
        await expect(page.get_by_role("heading", level=1)).to_contain_text("Trace")
        await page.go_back()
        await page.get_by_role("button", name="Verify the chain").click()
        await expect(page.get_by_text("intact", exact=True)).to_be_visible()
        await screenshot(page, "safety")


async def test_the_person_s_change_in_the_console_is_on_the_trail_and_exports(stack: Stack, tmp_path: Path) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("button", name="Rotate the token").click()
        await expect(page.get_by_role("region", name="The new MCP token")).to_be_visible()
        token = await page.get_by_label("the MCP token").text_content()
        stack.banner["MCP bearer token"] = (token or "").strip()  # the stack's token now
        await page.get_by_role("link", name="Safety").click()
        await page.get_by_label("Operator").select_option("person")
        calls = page.get_by_role("table", name="Management tool calls, newest first")
        await expect(calls.get_by_role("row").filter(has_text="POST /api/v1/mcp-token").first).to_contain_text(
            "person (console)"
        )
        async with page.expect_download() as downloading:
            await page.get_by_role("link", name="JSON lines").click()
        exported = tmp_path / "calls.jsonl"
        await (await downloading.value).save_as(exported)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert lines and all(line["operator"] == "person" for line in lines)
    assert any(line["tool"] == "POST /api/v1/mcp-token" and line["interface"] == "console" for line in lines)
