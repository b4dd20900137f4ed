"""The approval question and its outcomes are said in one module, in the seed's words, and docs/management.md shows
exactly what that module says: every gate (management, published tools, chat turns, shipped servers) speaks it."""

from __future__ import annotations

import re
from pathlib import Path

from saip.common import approval_sentences as said

MANAGEMENT_DOC = (Path(__file__).parents[3] / "docs" / "management.md").read_text()


def test_the_question_is_the_seeds_word_for_word() -> None:
    assert said.management_question("DESTRUCTIVE", "codex 0.169.0", "saip_tools_publish", "publish 'x'.", 180) == (
        "[DESTRUCTIVE] codex 0.169.0 wants to run saip_tools_publish: publish 'x'. "
        "Answer within 180 s, or the call is refused."
    )
    assert said.chat_question(2, "wiki_outline", {"page": "Home"}) == (
        '[risk L2] Chat turn started by this client wants to run a tool. Run \'wiki_outline\' with {"page": "Home"}?'
    )


def test_the_outcomes_are_the_seeds_word_for_word() -> None:
    assert (
        said.DECLINED.format(tool="x") == "Tool 'x' was not run: the user declined. Do not retry it for this request."
    )
    assert said.TIMEOUT.format(tool="x", wait=180) == (
        "Tool 'x' was not run: no approval within 180 s. Do not retry it for this request; ask the user to run it "
        "from the app if it is still needed."
    )
    assert said.DENIED.format(tool="x").startswith(
        "Tool 'x' was not run: it needs human approval and this client cannot ask for it (no elicitation support)."
    )
    assert said.LOOPBACK.format(tool="x").endswith("it is not available to this app's own chat.")
    assert "this is a high-risk action and needs a human decision, but approval is disabled" in (
        said.HIGH_RISK_UNDER_NONE.format(tool="x")
    )
    assert said.UNEXPECTED.format(message="boom") == "Unexpected error: boom"


def test_the_documented_outcome_table_is_what_the_module_says() -> None:
    table = dict(re.findall(r"^\| (DECLINED|TIMEOUT|DENIED) \| `(.+)` \|$", MANAGEMENT_DOC, flags=re.MULTILINE))
    assert table == {
        "DECLINED": said.DECLINED.format(tool="x"),
        "TIMEOUT": said.TIMEOUT.format(tool="x", wait=180),
        "DENIED": said.DENIED.format(tool="x"),
    }


def test_a_questions_arguments_are_masked_and_a_wait_cut_short_is_said_rounded_up() -> None:
    question = said.tool_question(3, "c 1", "fetch_it", "", {"password": "hunter2", "url": "https://a"}, 30)
    assert "hunter2" not in question and '"password": "***"' in question
    assert said.within(1.2, 180) == "2" and said.within(180, 180) == "180" and said.seconds(2.5) == "2.5"
