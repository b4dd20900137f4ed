"""The console's Shipyard screen in Chromium, against a stack as `make run` starts it: a server shipped from a
published tool, run after the person read the exact command, its log lines seen as they come, its token revealed on
click, then stopped, and its compose project downloaded."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.e2e.browser import chromium, person, screenshot
from tests.e2e.stack import Stack
from tests.unit.tools.specs import document

pytestmark = pytest.mark.e2e


def published(stack: Stack, name: str) -> None:
    """A tool the person wrote, passed its Local Pass and published (the REST routes the console's Tool Studio uses)."""
    with stack.api() as api:
        for step in (
            lambda: api.post("/api/v1/tools", json={"spec": document(name)}),
            lambda: api.post(f"/api/v1/tools/{name}/test"),
            lambda: api.post(f"/api/v1/tools/{name}/publish"),
        ):
            answer = step()
            assert answer.status_code == 200 and answer.json()["ok"], answer.text


async def test_a_server_is_shipped_run_followed_and_stopped_from_the_console(stack: Stack, tmp_path: Path) -> None:
    published(stack, "console_adder")
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Shipyard").click()
        await page.get_by_label("Server name").fill("adding")
        await page.get_by_label("Description", exact=True).fill("Adds numbers.")
        await page.get_by_role("checkbox", name="console_adder").check()
        await page.get_by_role("button", name="Validate").click()
        await expect(page.get_by_role("status").filter(has_text="'adding' can ship")).to_be_visible()
        await page.get_by_role("button", name="Ship", exact=True).click()
        await expect(page.get_by_role("status").filter(has_text="Shipped 'adding' v1")).to_be_visible()

        servers = page.get_by_role("table", name="Shipped servers")
        await servers.get_by_role("button", name="adding v1").click()
        await page.get_by_role("button", name="Run…").click()
        command = page.get_by_role("region", name="What the run does").locator("pre")
        await expect(command).to_contain_text("saip.shipped")
        await page.get_by_role("button", name="Run this command").click()
        await expect(servers.get_by_role("row").filter(has_text="adding v1")).to_contain_text("running")
        await expect(page.get_by_role("log", name="Its last log lines")).not_to_have_text("No line yet.")
        await page.get_by_role("button", name="Reveal its bearer token").click()
        await expect(page.get_by_label("the Claude Code command")).to_contain_text("Authorization: Bearer ")
        await screenshot(page, "shipyard")
        await page.get_by_role("button", name="Stop").click()
        await expect(servers.get_by_role("row").filter(has_text="adding v1")).to_contain_text("stopped")
        async with page.expect_download() as downloading:
            await page.get_by_role("link", name="Download the compose project").click()
        archive = tmp_path / "adding.tar.gz"
        await (await downloading.value).save_as(archive)
    with tarfile.open(archive) as files:
        names = files.getnames()
    assert any(name.endswith("compose.yaml") for name in names), names
