"""The console in a real browser: Debian's Chromium driven by Playwright (its own browser download is not used), each
test in a fresh profile; signing in as a person does; axe-core's check of a page; a screenshot for the docs."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from tests.e2e.stack import Stack

CHROMIUM = "/usr/bin/chromium"
# As these machines need it: no sandbox (root), no GPU, and none of Chromium's own traffic to the closed network.
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = Path(__file__).resolve().parents[1] / "clients" / "node_modules" / "axe-core" / "axe.min.js"
ROOT = Path(__file__).resolve().parents[2]
# Where the screenshots of docs/console.md go when SAIP_SCREENSHOTS names a folder (`make screenshots`).
SCREENSHOTS = os.environ.get("SAIP_SCREENSHOTS")
# Long enough for a loaded machine; a wait that is reached returns at once.
WAIT_MS = 20_000
expect.set_options(timeout=WAIT_MS)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def person(browser: Browser, stack: Stack, **options: Any) -> AsyncIterator[Page]:
    """A new browser profile signed in to the stack's console as a person does: the banner's URL, the admin token
    typed into the sign-in form. Every error the page throws fails the test when it ends."""
    context: BrowserContext = await browser.new_context(viewport={"width": 1280, "height": 900}, **options)
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # Chromium reports what the Content-Security-Policy refused (an inline style, a script) as a console error.
    page.on(
        "console",
        lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None,
    )
    try:
        await page.goto(stack.console_url)
        await page.get_by_label("Admin token").fill(stack.admin_token)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_role("heading", name="Overview", level=1).wait_for()
        yield page
    finally:
        await context.close()
    assert errors == [], f"the console threw, or its policy refused something: {errors}"


async def accessibility_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA, best practices)."""
    await page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ["violations"]});
            return result.violations
                .filter((v) => v.impact === "serious" || v.impact === "critical")
                .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                              nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" "))}));
        }"""
    )
    return found


def described(violations: list[dict[str, Any]]) -> str:
    return json.dumps(violations, indent=1)


async def screenshot(page: Page, name: str) -> None:
    """The page as it is, for docs/console.md, when SAIP_SCREENSHOTS names a folder."""
    if SCREENSHOTS:  # Playwright makes the folder
        await page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=False)
