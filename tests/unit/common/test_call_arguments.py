"""A served call's arguments are a JSON object or a sentence that names the tool and what to send instead."""

from __future__ import annotations

import pytest

from saip.common import call_arguments


@pytest.mark.parametrize(
    ("text", "arguments"), [("", {}), ("{}", {}), ('{"query": "nats", "topK": 3}', {"query": "nats", "topK": 3})]
)
def test_an_object_is_the_arguments_and_no_text_is_none(text: str, arguments: dict[str, object]) -> None:
    assert call_arguments.read("lookup", text) == arguments


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        (
            "{'single': 1}",
            "Invalid arguments for 'lookup': not JSON (Expecting property name enclosed in double quotes).",
        ),
        ('["query"]', "Invalid arguments for 'lookup': pass a JSON object of parameter values."),
        ("3", "Invalid arguments for 'lookup': pass a JSON object of parameter values."),
        (
            '{"a":' + "[" * 5000 + "]" * 5000 + "}",
            "Invalid arguments for 'lookup': the JSON is nested more than 64 levels deep, which saip does not read; "
            "send flatter data (a list of items rather than items inside items).",
        ),
    ],
)
def test_what_is_not_an_object_is_refused_naming_the_tool(text: str, sentence: str) -> None:
    with pytest.raises(call_arguments.BadArguments) as refused:
        call_arguments.read("lookup", text)
    assert str(refused.value) == sentence
