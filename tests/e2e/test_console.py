"""The console in Chromium against a stack started as `make run` starts it: signing in (and the MCP token refused),
the session cookie's flags, the CSRF proof, the approvals inbox answering a headless client's question in both eras,
names with markup shown as text, a chat turn refused for want of a model, axe-core's check of every screen in light
and dark, and every screen at a phone's width (nothing wider than it, no read that fails)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from playwright.async_api import Page, expect

from saip.gateway.console.routes import MCP_TOKEN
from tests.e2e.browser import accessibility_violations, chromium, described, person, screenshot
from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.e2e.test_local_stack import started
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

EXPOSE = {"autoExpose": False, "tools": []}
# Every screen of the console's navigation, by its path.
SCREENS = [
    "/",
    "/approvals",
    "/safety",
    "/tools",
    "/servers",
    "/knowledge",
    "/shipyard",
    "/traces",
    "/chat",
    "/clients",
    "/consent",
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack whose questions to clients that cannot ask wait for the person (the inbox)."""
    with start_stack(
        tmp_path_factory.mktemp("saip-console"), env={"SAIP_MANAGEMENT_OUT_OF_BAND_APPROVALS": "true"}
    ) as running:
        yield running


async def test_a_person_signs_in_with_the_admin_token_and_the_browser_keeps_only_a_strict_cookie(stack: Stack) -> None:
    async with chromium() as browser:
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(stack.console_url)
        await page.get_by_label("Admin token").fill(stack.mcp_token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_have_text(MCP_TOKEN)
        await page.get_by_label("Admin token").fill(stack.admin_token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()
        (cookie,) = await context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (
            "saip_session",
            True,
            "Strict",
            False,  # plain http here; Secure behind https
        )
        assert stack.admin_token not in cookie["value"]
        stored = await page.evaluate("JSON.stringify([localStorage, sessionStorage, document.cookie])")
        assert stack.admin_token not in stored and "saip_session" not in stored
        await screenshot(page, "overview")
        await context.close()


async def test_the_keyboard_starts_at_the_token_and_returns_there_after_sign_out(stack: Stack) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("button", name="Sign out").click()
        token = page.get_by_label("Admin token")
        await expect(token).to_be_focused()
        await page.keyboard.type(stack.admin_token)
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()


async def test_a_change_without_the_csrf_proof_is_refused_and_nothing_changes(stack: Stack) -> None:
    async with chromium() as browser, person(browser, stack) as page:
        before = await page.evaluate("fetch('/api/v1/status').then((r) => r.json())")
        # What a page of another origin could make the browser send with the cookie (were it not SameSite=Strict).
        answer = await page.evaluate(
            "fetch('/api/v1/mcp-token', {method: 'POST'}).then(async (r) => [r.status, (await r.json()).message])"
        )
        assert answer[0] == 403 and "CSRF proof" in answer[1]
        after = await page.evaluate("fetch('/api/v1/status').then((r) => r.json())")
        assert after["data"]["mcp"]["token"] == before["data"]["mcp"]["token"]


@pytest.mark.parametrize("era", [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")])
async def test_a_headless_client_s_question_is_approved_in_the_inbox_and_its_call_runs(stack: Stack, era: str) -> None:
    headless = types.Implementation(name=f"nightly-{era}", version="1")
    said: list[dict[str, Any]] = []
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Approvals").click()
        await expect(page.get_by_role("heading", name="Approvals", level=1)).to_be_visible()
        async with (
            mcp_client(stack.mcp_url, stack.mcp_token, mode=era, client_info=headless) as client,
            anyio.create_task_group() as group,
        ):

            async def call() -> None:
                if era == "legacy":  # the call is held until the person answers
                    said.append(envelope(await client.call_tool("saip_tools_set_exposure", EXPOSE)))
                    return
                asked = await client.session.call_tool("saip_tools_set_exposure", EXPOSE, allow_input_required=True)
                assert isinstance(asked, types.InputRequiredResult)
                await eventually(lambda: _answered(stack, headless.name), within=60)
                retried = await client.session.call_tool(
                    "saip_tools_set_exposure", EXPOSE, request_state=asked.request_state, allow_input_required=True
                )
                assert isinstance(retried, types.CallToolResult)
                said.append(envelope(retried))

            group.start_soon(call)
            card = page.get_by_role("listitem").filter(has_text=f"nightly-{era} 1")
            await expect(card.locator(".question")).to_have_text(
                f"[DESTRUCTIVE] nightly-{era} 1 wants to run saip_tools_set_exposure: "
                "serve published tools only when listed; also serve no others. "
                "Answer within 180 s, or the call is refused."
            )
            await expect(card.get_by_role("timer")).to_contain_text("s left")
            await screenshot(page, "approvals")
            await card.get_by_role("button", name=f"Approve saip_tools_set_exposure for nightly-{era} 1").click()
            await expect(page.get_by_role("status").filter(has_text="Approved saip_tools_set_exposure")).to_be_visible()
            await expect(card).to_have_count(0)  # it left the list
            answered = page.get_by_role("list", name="Recent answers").get_by_role("listitem").first
            await expect(answered).to_contain_text(f"saip_tools_set_exposure for nightly-{era} 1: approved")
            await expect(answered).to_contain_text("by the person, in the console")
    assert said and said[0]["ok"] is True, said
    assert said[0]["message"] == "Exposure saved: serve published tools only when listed; also serve no others."


async def test_a_client_named_with_markup_is_shown_as_text_and_runs_nothing(stack: Stack) -> None:
    markup = "<img src=x onerror=window.__pwned=1>"
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Approvals").click()
        async with mcp_client(
            stack.mcp_url, stack.mcp_token, mode="auto", client_info=types.Implementation(name=markup, version="1")
        ) as client:
            asked = await client.session.call_tool("saip_tools_set_exposure", EXPOSE, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            card = page.get_by_role("listitem").filter(has_text=markup)
            await expect(card.get_by_role("heading")).to_contain_text(markup)
            assert await page.evaluate("window.__pwned") is None
            assert await page.locator("main img").count() == 0
            await card.get_by_role("button", name="Decline", exact=False).click()
            await expect(card).to_have_count(0)


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_no_screen_has_a_serious_or_critical_accessibility_violation(stack: Stack, scheme: str) -> None:
    async with chromium() as browser, person(browser, stack, color_scheme=scheme) as page:
        assert await page.evaluate("document.documentElement.dataset.theme") == scheme  # the system's, followed
        found: dict[str, Any] = {}
        for path in SCREENS:
            await page.goto(stack.console_url.rstrip("/") + path)
            await page.locator("main h1").wait_for()
            await _settled(page)
            violations = await accessibility_violations(page)
            if violations:
                found[path] = violations
        assert found == {}, described([found])


async def test_a_chat_turn_refused_for_want_of_a_model_keeps_the_prompt_typed(stack: Stack) -> None:
    """This stack has no chat model: the refusal (200, ok false, no data) is shown, the page throws nothing and the
    prompt stays for the person to ask again once a model is set."""
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Chat").click()
        await page.get_by_label("Prompt").fill("What changed on /mcp today?")
        await page.get_by_role("button", name="Ask").click()
        await expect(page.get_by_role("alert")).to_contain_text("No chat model is configured")
        await expect(page.get_by_label("Prompt")).to_have_value("What changed on /mcp today?")


async def test_every_screen_fits_a_phone_and_reads_only_routes_that_answer(stack: Stack) -> None:
    """At 390 px nothing is wider than the screen (a field, a fact list, a fieldset, a two-column layout), and no
    screen reads a route that fails: the consent page opened without a client's request reads nothing."""
    async with chromium() as browser, person(browser, stack) as page:
        await page.set_viewport_size({"width": 390, "height": 844})
        failed: list[str] = []
        page.on(
            "response",
            lambda answer: (
                failed.append(f"{answer.status} {answer.url}")
                if answer.status >= 400 and answer.request.method == "GET"
                else None
            ),
        )
        wide: dict[str, list[str]] = {}
        for path in [*SCREENS, "/tools?new="]:
            await page.goto(stack.console_url.rstrip("/") + path)
            await page.locator("main h1").wait_for()
            await _settled(page)
            over = await page.evaluate(
                """() => {
                    // What a scrolling box holds (a wide table in its wrapper) scrolls there, not the page.
                    const scrolled = (e) => e.parentElement.closest("main") !== null
                        && (["auto", "scroll"].includes(getComputedStyle(e.parentElement).overflowX)
                            || scrolled(e.parentElement));
                    return [...document.querySelectorAll("main *")]
                        .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                        .filter((e) => !scrolled(e))
                        .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
                }"""
            )
            if over:
                wide[path] = over[:4]
        # The chat's form is below its list, as wide as the screen, not squeezed into a column beside it.
        await page.goto(stack.console_url.rstrip("/") + "/chat")
        prompt = await page.get_by_label("Prompt").bounding_box()
    assert wide == {}, wide
    assert failed == [], failed
    assert prompt is not None and prompt["width"] > 300, prompt


async def _settled(page: Page) -> None:
    """The screen has read what it shows (no 'Loading…' left)."""
    await expect(page.get_by_text("Loading…")).to_have_count(0)


def _answered(stack: Stack, client: str) -> bool:
    """No question of `client` is waiting any more (the person answered it)."""
    with stack.api() as api:
        waiting = api.get("/api/v1/approvals").json()["data"]["approvals"]
    return not any(question["client"].startswith(client) for question in waiting)


async def test_the_console_follows_a_gateway_restart_without_a_reload(stack: Stack) -> None:
    """Last in this module: it kills the stack's gateway (saip run starts it again)."""
    async with chromium() as browser, person(browser, stack) as page:
        live = page.get_by_role("status").filter(has_text="Live")
        await expect(live).to_be_visible()
        fingerprint = page.locator("dd code").nth(1)  # the MCP token's fingerprint, on the Overview
        before = await fingerprint.text_content()
        os.kill(started(stack)["gateway"], signal.SIGKILL)
        await expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_be_visible()
        await expect(live).to_be_visible(timeout=90_000)  # started again, and the feed opened again
        with stack.api() as api:  # a change made after the restart, through the REST API
            token = api.post("/api/v1/mcp-token").json()["data"]["token"]
        stack.banner["MCP bearer token"] = token
        await expect(fingerprint).not_to_have_text(before or "")  # told by the feed, with no reload
        await expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()  # still signed in
