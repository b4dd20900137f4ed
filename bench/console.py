"""The console in Chromium against a running stack: its first useful paint (from the navigation to the Overview
showing what /api/v1/status answered) in a cold browser profile, beside the same browser's navigation to a page with
no script at all (/healthz), the floor of any page here; and the JavaScript it ships, gzipped, whole and for the first
screen."""

from __future__ import annotations

import gzip
import tempfile
import time
from pathlib import Path

import anyio
import httpx
from playwright.async_api import Browser, async_playwright

from bench.stats import row, summary, table
from saip.gateway.console.static import BUILT
from tests.e2e.browser import CHROMIUM, FLAGS
from tests.e2e.stack import Stack, start_stack

LOADS = 15


def _gzipped(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=9))


def sizes() -> list[list[object]]:
    """The built console's files, gzipped (KB): every script, the first screen's (the entry and the Overview), CSS."""
    assets = BUILT / "assets"
    scripts = sorted(assets.glob("*.js"))
    first = [path for path in scripts if path.name.startswith(("index-", "Overview-"))]
    styles = sorted(assets.glob("*.css"))
    return [
        ["every script", sum(map(_gzipped, scripts)) / 1024, len(scripts)],
        ["the first screen's scripts", sum(map(_gzipped, first)) / 1024, len(first)],
        ["styles", sum(map(_gzipped, styles)) / 1024, len(styles)],
    ]


def _session(stack: Stack) -> dict[str, str | bool]:
    answer = httpx.post(f"{stack.url}/api/v1/session", json={"token": stack.admin_token}, timeout=10)
    answer.raise_for_status()
    value = answer.cookies["saip_session"]
    return {"name": "saip_session", "value": value, "url": stack.url, "httpOnly": True, "sameSite": "Strict"}


async def _loads(browser: Browser, stack: Stack, path: str, ready: str | None) -> list[float]:
    """`LOADS` navigations to `path`, each in a new profile (nothing cached), until `ready` shows (ms)."""
    cookie = _session(stack)
    samples = []
    for _ in range(LOADS):
        context = await browser.new_context()
        await context.add_cookies([cookie])  # type: ignore[list-item]
        page = await context.new_page()
        started = time.perf_counter()
        await page.goto(stack.url + path)
        if ready is not None:
            await page.get_by_text(ready).first.wait_for()
        samples.append((time.perf_counter() - started) * 1000)
        await context.close()
    return samples


async def _paints(stack: Stack) -> list[list[object]]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            await _loads(browser, stack, "/console/", "MCP server")  # the browser's own first start, not counted
            floor = summary(await _loads(browser, stack, "/healthz", None))
            console = summary(await _loads(browser, stack, "/console/", f"{stack.url}/mcp"))
        finally:
            await browser.close()
    return [row("a page with no script (/healthz)", floor), row("the console's Overview, its data shown", console)]


def run() -> str:
    with tempfile.TemporaryDirectory() as home:
        stack = start_stack(Path(home))
        try:
            paints = anyio.run(_paints, stack)
        finally:
            stack.stop()
    return "\n\n".join(
        [
            table(f"Console first useful paint, cold profile, {LOADS} loads (ms)", ["", "p50", "p90", "p99"], paints),
            table("Console JavaScript and CSS shipped, gzipped (KB)", ["", "KB", "files"], sizes()),
        ]
    )


if __name__ == "__main__":
    print(run())
