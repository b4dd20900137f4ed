"""`saip tools save` and `saip tools risk` read a tool spec from a file or stdin, `saip tools test --args` a trial run's
arguments; one that cannot be read, or is not one JSON object, is refused with what to give instead, before anything is
sent."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click
import pytest

from saip.cli.tools import arguments_of, row_of, spec_of


def test_a_spec_file_is_read_as_one_json_object(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"name": "word_count", "code": "return 1"}', encoding="utf-8")
    assert spec_of(str(spec)) == {"name": "word_count", "code": "return 1"}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "Cannot read {path}: No such file or directory. Give a file holding a tool spec, or - for stdin."),
        (b"\xff\xfe{}", "{path} is not UTF-8 text; a tool spec is JSON."),
        (b"{bad", "{path} is not JSON: Expecting property name enclosed in double quotes at line 1"),
        (b"[1, 2]", "{path} must hold one tool spec (a JSON object)"),
    ],
)
def test_a_spec_that_cannot_be_used_is_refused_saying_why(tmp_path: Path, content: bytes | None, said: str) -> None:
    spec = tmp_path / "spec.json"
    if content is not None:
        spec.write_bytes(content)
    with pytest.raises(click.ClickException) as refused:
        spec_of(str(spec))
    assert refused.value.format_message() == said.format(path=spec)


def test_a_folder_is_refused_as_unreadable(tmp_path: Path) -> None:
    with pytest.raises(click.ClickException) as refused:
        spec_of(str(tmp_path))
    assert refused.value.format_message() == (
        f"Cannot read {tmp_path}: Is a directory. Give a file holding a tool spec, or - for stdin."
    )


def test_a_spec_on_standard_input_that_is_not_utf_8_is_refused_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under the C locale Python reads standard input with surrogateescape: the bytes arrive as text, not as an error.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff{}"), "utf-8", errors="surrogateescape"))
    with pytest.raises(click.ClickException) as refused:
        spec_of("-")
    assert refused.value.format_message() == "- is not UTF-8 text; a tool spec is JSON."


def test_trial_arguments_are_one_json_object() -> None:
    assert arguments_of('{"text": "a b"}') == {"text": "a b"}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("nope", "--args is not JSON (Expecting value at column 1): "),
        ('{"text": ', "--args is not JSON (Expecting value at column 10): "),
        ("[1]", "--args must be a JSON object of the tool's arguments: "),
    ],
)
def test_trial_arguments_that_are_not_an_object_are_refused_with_an_example(given: str, said: str) -> None:
    with pytest.raises(click.ClickException) as refused:
        arguments_of(given)
    assert refused.value.format_message() == said + """for instance --args '{"text": "one two"}'"""


def test_a_listed_tool_names_its_network_as_such() -> None:
    tool = {"name": "wc", "state": "published", "risk": "L0", "source": "authored", "servedOnMcp": True}
    assert row_of({**tool, "network": {"mode": "blocked", "hosts": []}})[4:] == ["served", "network blocked"]
    allowed = {**tool, "servedOnMcp": False, "network": {"mode": "allowlist", "hosts": ["a.test", "b.test"]}}
    assert row_of(allowed)[4:] == ["-", "network allowlist a.test,b.test"]
