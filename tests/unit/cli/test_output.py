"""The command line's output: fixed columns that align line after line, aligned fields, and the exit code of a
result that is not ok."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from saip.cli.audit import line
from saip.cli.output import Table, fields, listing, page, report


def test_a_table_pads_left_right_or_not_at_all() -> None:
    table = Table((6, -4, 0), gap="|")
    assert table.line("ab", 7, "rest") == "ab    |   7|rest"


def test_an_audit_line_keeps_its_columns() -> None:
    entry = {
        "time": "2026-12-01T09:30:00.123Z",
        "client": "claude-code 2.1",
        "tool": "audited",
        "source": "authored",
        "outcome": "OK",
        "durationMs": 42,
        "approval": "approved",
    }
    words = line(entry).split()
    assert words[:4] == ["2026-12-01", "09:30:00", "claude-code", "2.1"]
    assert words[words.index("audited") + 1 :] == ["authored", "OK", "42", "ms", "approval=approved"]


def test_fields_align_one_space_after_the_longest_label() -> None:
    @click.command()
    def show() -> None:
        fields([("MCP token", "set by api"), ("Management tools", "on (5 tools)")])

    assert CliRunner().invoke(show).output == "MCP token:        set by api\nManagement tools: on (5 tools)\n"


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_a_result_that_is_not_ok_exits_1_after_its_message(ok: bool, code: int) -> None:
    @click.command()
    def done() -> None:
        report({"ok": ok, "message": "chain intact", "warnings": ["slow"]})

    result = CliRunner().invoke(done)
    assert (result.exit_code, result.stdout) == (code, "chain intact\n")
    assert "warning: slow" in result.stderr


@pytest.mark.parametrize(
    ("data", "entries"),
    [([], None), ({"documents": [], "count": 0}, "documents"), ({"server": {"id": "down"}, "tools": []}, "tools")],
)
def test_a_listing_with_nothing_in_it_prints_the_message_that_says_so(data: object, entries: str | None) -> None:
    envelope = {"ok": True, "message": "0 documents: ingest one first.", "data": data}

    @click.command()
    def show() -> None:
        listing(envelope, False, lambda found: click.echo(f"listed {found}"), entries=entries)

    assert CliRunner().invoke(show).output == "0 documents: ingest one first.\n"


def test_a_listing_with_entries_or_that_is_no_list_is_shown() -> None:
    @click.command()
    @click.argument("which")
    def show(which: str) -> None:
        data = {"listed": {"documents": [{"name": "a"}]}, "object": {"params": [], "name": "tool"}}[which]
        listing({"message": "said", "data": data}, False, lambda found: click.echo(f"shown {found}"), entries=None)
        listing({"message": "said", "data": data}, False, lambda found: click.echo("again"), entries="documents")

    assert CliRunner().invoke(show, ["listed"]).output == "shown {'documents': [{'name': 'a'}]}\nagain\n"
    assert CliRunner().invoke(show, ["object"]).output == "shown {'params': [], 'name': 'tool'}\nagain\n"


def test_an_empty_page_of_the_trail_still_says_how_to_ask_for_the_older_one() -> None:
    @click.command()
    def show() -> None:
        page({"entries": [], "count": 0, "nextCursor": 812}, lambda entry: "never", "0 tool calls, newest first.")
        page({"entries": [{"n": 1}], "count": 1, "nextCursor": None}, lambda entry: f"entry {entry['n']}", "unsaid")

    assert CliRunner().invoke(show).output == "0 tool calls, newest first.\n(older: --before 812)\nentry 1\n"
