"""`saip expose apply` and `saip servers add` turn their options into the REST API's bodies: members as
SERVER/TOOL[=ALIAS], headers and variables as NAME=${ENV}; a malformed one is refused naming the option."""

from __future__ import annotations

import click
import pytest

from saip.cli.upstream import change_body, pairs


def test_members_are_server_slash_tool_with_an_optional_alias() -> None:
    body = change_body(("wiki/search", "wiki/page=wiki_page"), ("old",), ("search",), no_hitl=False)
    assert body == {
        "add": [
            {"serverId": "wiki", "tool": "search", "alias": "", "hitl": True},
            {"serverId": "wiki", "tool": "page", "alias": "wiki_page", "hitl": True},
        ],
        "remove": ["old"],
        "acknowledgeChanged": ["search"],
    }
    assert change_body(("wiki/search",), (), (), no_hitl=True)["add"][0]["hitl"] is False


def test_a_member_without_a_tool_is_refused_naming_the_option() -> None:
    with pytest.raises(click.BadParameter) as refused:
        change_body(("wiki",), (), (), no_hitl=False)
    assert "'wiki' is not SERVER/TOOL or SERVER/TOOL=ALIAS" in refused.value.format_message()


def test_headers_are_name_equals_reference() -> None:
    assert pairs(("Authorization=Bearer ${WIKI_TOKEN}",)) == {"Authorization": "Bearer ${WIKI_TOKEN}"}
    with pytest.raises(click.BadParameter):
        pairs(("Authorization",))
