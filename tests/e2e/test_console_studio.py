"""Tool Studio in Chromium against a stack started as `make run` starts it: a tool written in the editor passes its
Local Pass, is published (what it would do shown before the click) and a real MCP client calls it; a title and a
description with markup are shown as text and run nothing; axe-core finds no serious or critical violation on the
list or the editor, in light and dark."""

from __future__ import annotations

import json
import re

import pytest
from playwright.async_api import Page, expect

from tests.e2e.browser import accessibility_violations, chromium, described, person, screenshot
from tests.e2e.stack import Stack, mcp_client
from tests.results import text
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

NAME = "studio-words"
CODE = "\n".join(
    [
        "const words = text.trim().split(/\\s+/).filter(Boolean);",
        'console.log("counting");',
        "return { words: words.length };",
    ]
)
MARKUP = "<img src=x onerror=window.__pwned=1>"


async def studio(page: Page) -> None:
    await page.get_by_role("link", name="Tool Studio").click()
    await expect(page.get_by_role("heading", name="Tool Studio", level=1)).to_be_visible()


async def test_a_tool_written_in_the_editor_passes_its_local_pass_is_published_and_an_mcp_client_calls_it(
    stack: Stack,
) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await studio(page)
        await page.get_by_role("button", name="New tool").click()
        await page.get_by_label("Name", exact=True).fill(NAME)
        await page.get_by_label("Description", exact=True).fill("Counts the words of a text.")
        code = page.get_by_role("textbox", name="Code")
        await code.click()
        await page.keyboard.press("Control+A")
        await page.keyboard.type(CODE)
        await page.get_by_label("Test value of parameter 1").fill("one two three four")
        await page.get_by_role("button", name="Test", exact=True).click()  # saves the draft, then its Local Pass

        passed = page.get_by_role("status").filter(has_text=f"Local Pass of '{NAME}' passed")
        await expect(passed).to_be_visible()
        pass_card = page.get_by_role("region", name="Local Pass")
        await expect(pass_card.locator("pre.code").first).to_have_text(json.dumps({"words": 4}, indent=2))
        await expect(pass_card.locator("pre.code").nth(1)).to_have_text("counting")
        await expect(pass_card.get_by_text(re.compile(r"^\d+ ms$"))).to_be_visible()
        await expect(pass_card.get_by_text("no sandbox overrides", exact=False)).to_be_visible()
        # What publishing does and at which risk, before the click.
        plan = page.get_by_role("region", name="Publish").get_by_role("status")
        await expect(plan).to_have_text(
            f"Publish '{NAME}' and serve it on /mcp: risk L0, network blocked, calls run without asking the person."
        )
        await expect(page.locator(".cm-content .cm-line").first).to_contain_text("const words")  # the code, highlighted
        await screenshot(page, "tool-studio")
        await page.get_by_role("button", name="Publish", exact=True).click()
        await expect(page.get_by_role("status").filter(has_text=f"Published '{NAME}'")).to_be_visible()

    async with mcp_client(stack.mcp_url, stack.mcp_token) as client:

        async def served() -> bool:
            return NAME in {tool.name for tool in (await client.list_tools()).tools}

        await eventually(served, within=30)
        answer = await client.call_tool(NAME, {"text": "the quick brown fox jumps"})
    assert json.loads(text(answer)) == {"words": 5}


async def test_a_title_and_description_with_markup_are_shown_as_text_and_run_nothing(stack: Stack) -> None:
    spec = {
        "name": "studio-markup",
        "title": MARKUP,
        "description": f"Says hello {MARKUP}",
        "params": [],
        "code": "return 'hello';",
    }
    with stack.api() as api:
        assert api.post("/api/v1/tools", json={"spec": spec}).json()["ok"]
    async with chromium() as browser, person(browser, stack) as page:
        await studio(page)
        await expect(page.get_by_role("row").filter(has_text="studio-markup")).to_contain_text(f"Says hello {MARKUP}")
        await page.get_by_role("link", name="Open studio-markup").click()
        await expect(page.get_by_label("Title", exact=True)).to_have_value(MARKUP)
        await expect(page.get_by_label("Description", exact=True)).to_have_value(f"Says hello {MARKUP}")
        assert await page.evaluate("window.__pwned") is None
        assert await page.locator("main img").count() == 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_list_and_the_editor_have_no_serious_or_critical_accessibility_violation(
    stack: Stack, scheme: str
) -> None:
    async with chromium() as browser, person(browser, stack, color_scheme=scheme) as page:
        await studio(page)
        await expect(page.get_by_role("row").filter(has_text="text-stats")).to_be_visible()
        listed = await accessibility_violations(page)
        await page.get_by_role("button", name="Copy text-stats into a new draft").click()
        await expect(page.locator(".cm-content")).to_contain_text("const words")
        await expect(page.get_by_role("region", name="Risk as written")).to_contain_text("L0")
        edited = await accessibility_violations(page)
    assert (listed, edited) == ([], []), described([listed, edited])
