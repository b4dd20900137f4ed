"""The console's Knowledge and Traces screens in Chromium, against a stack as `make run` starts it: a file uploaded
from the person's computer is ingested (its progress shown), found by search with its score and published as a
knowledge tool an MCP client calls; a document named with markup is shown as text; a call's trace opens as a span
waterfall, and a duration filter that is no duration is said at its field."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import expect

from tests.e2e.browser import chromium, person, screenshot
from tests.e2e.stack import Stack, mcp_client

pytestmark = pytest.mark.e2e

RUNBOOK = b"# Broker runbook\n\nRestart the NATS broker with systemctl when clients report a stale connection.\n"


async def test_a_file_uploaded_in_the_console_is_found_by_search_and_served_as_a_tool(stack: Stack) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Knowledge").click()
        await expect(page.get_by_role("heading", name="Knowledge", level=1)).to_be_visible()
        await page.get_by_label("File", exact=True).set_input_files(
            {"name": "broker.md", "mimeType": "text/markdown", "buffer": RUNBOOK}
        )
        await page.get_by_role("button", name="Ingest").click()
        await expect(page.get_by_role("status").filter(has_text="Ingested 'broker.md'")).to_be_visible()
        documents = page.get_by_role("table", name="Ingested documents")
        await expect(documents.get_by_role("row").filter(has_text="broker.md")).to_contain_text("upload: broker.md")
        # The file sent is no longer named as chosen: an Ingest now would say to choose one, not send it again.
        await expect(page.get_by_label("File", exact=True)).to_have_value("")

        await page.get_by_label("Question or keywords").fill("restart the broker")
        await page.get_by_role("button", name="Search", exact=True).click()
        passage = page.get_by_role("list", name="Passages found").get_by_role("listitem").first
        await expect(passage).to_contain_text("broker.md #0")
        await expect(passage).to_contain_text("score")
        await screenshot(page, "knowledge")

        await page.get_by_label("Tool name").fill("broker_answers")
        await page.get_by_label("Description").fill("Answers questions about the broker.")
        await page.get_by_role("button", name="Publish on /mcp").click()
        await expect(page.get_by_role("table", name="Published knowledge tools")).to_contain_text("broker_answers")

    async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
        answer = await client.call_tool("broker_answers", {"query": "restart the broker"})
    block = answer.content[0]
    assert block.type == "text" and json.loads(block.text)["results"][0]["document"] == "broker.md"


async def test_a_document_named_with_markup_is_shown_as_text(stack: Stack) -> None:
    markup = "<img src=x onerror=window.__pwned=1>"
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Knowledge").click()
        await page.get_by_label("Text", exact=True).check()
        await page.get_by_role("textbox", name="Text").fill("# Notes\n\nThe lights are off on Sundays.")
        await page.get_by_label("Name (optional)").fill(markup)
        await page.get_by_role("button", name="Ingest").click()
        row = page.get_by_role("table", name="Ingested documents").get_by_role("row").filter(has_text=markup)
        await expect(row).to_have_count(1)
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("main img").count() == 0


async def test_a_call_s_trace_opens_as_a_span_waterfall(stack: Stack) -> None:
    async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
        await client.call_tool("saip_monitor_overview", {})
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Traces").click()
        # A duration that is none is said at its field, kept as typed, and never sent (no refusal of the route).
        minimum = page.get_by_label("At least (ms)")
        await minimum.fill("-5")
        await expect(page.get_by_role("alert")).to_have_text(
            "A duration in milliseconds, 0 or more (empty for any): the list keeps the last one that was."
        )
        await expect(minimum).to_have_value("-5")
        await expect(page.get_by_text("Invalid request")).to_have_count(0)
        await minimum.fill("")
        await expect(page.get_by_role("alert")).to_have_count(0)
        await page.get_by_label("Tool", exact=True).fill("saip_monitor_overview")
        first = page.get_by_role("table", name="The recent traces, newest first").get_by_role("link").first
        await first.click()
        await expect(page.get_by_role("heading", level=1)).to_contain_text("Trace")
        spans = page.get_by_role("list", name="Spans, in the order they started").get_by_role("listitem")
        await expect(spans.first).to_contain_text("gateway")
        assert await spans.count() >= 3  # the gateway's request and gate steps, the gRPC hop, the audit's chaining
        await spans.first.locator("summary").click()
        await expect(spans.first).to_contain_text("Starts at")
        await screenshot(page, "trace")
