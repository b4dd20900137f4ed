"""The console's Chat screen in Chromium, against a stack as `make run` starts it with the scripted model: the person
asks a turn with a published tool the model calls, and sees it beside the turn an AI ran with saip_chat_ask, as if
typed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.async_api import expect

from tests.e2e.browser import chromium, person, screenshot
from tests.e2e.stack import ChatStack, chat_stack, mcp_client
from tests.e2e.test_console_shipyard import published
from tests.model_server import call, say

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatStack]:
    with chat_stack(tmp_path_factory.mktemp("saip-console-chat"), {}) as running:
        yield running


async def test_a_turn_asked_in_the_console_calls_the_chosen_tool_and_sits_beside_an_ai_s(chat: ChatStack) -> None:
    stack, model = chat.stack, chat.model
    published(stack, "chat_adder")
    model.steps.extend([say("Adding is what I do."), call("chat_adder", {"a": 2, "b": 3}), say("2 and 3 make 5.")])
    async with mcp_client(stack.mcp_url, stack.mcp_token) as client:
        await client.call_tool("saip_chat_ask", {"prompt": "What do you do?"})
    async with chromium() as browser, person(browser, stack) as page:
        await page.get_by_role("link", name="Chat").click()
        conversations = page.get_by_role("navigation", name="Conversations")
        await conversations.get_by_role("button").first.click()
        turns = page.get_by_role("list", name="Turns")
        await expect(turns).to_contain_text("asked by e2e-client 1.0")  # the AI's turn, as if typed
        await expect(turns).to_contain_text("Adding is what I do.")

        await page.get_by_role("button", name="New conversation").click()
        await page.get_by_label("Prompt").fill("Add 2 and 3.")
        await page.get_by_role("checkbox", name="chat_adder").check()
        await page.get_by_role("button", name="Ask").click()
        await expect(page.get_by_role("list", name="Turns")).to_contain_text("2 and 3 make 5.")
        await expect(page.get_by_role("list", name="Turns")).to_contain_text("chat_adder (ran)")
        await screenshot(page, "chat")
    asked = model.requests[-2]
    assert [tool["function"]["name"] for tool in asked["tools"]] == ["chat_adder"]
