"""How the command line prints: the envelope's message (or the whole answer as JSON with `--json`), fixed-width
tables, aligned fields and pages of the audit trail."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from saip.cli.hints import for_person

json_option = click.option("--json", "as_json", is_flag=True, help="Print the REST API's answer as JSON.")


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def say(message: str, *, err: bool = False, hints: bool = True) -> None:
    """A message of the gateway's; with `hints`, the management tools it names to call next as the commands that do
    the same (off where the message is about the AI's own calls: an approval, the audit trail)."""
    click.echo(for_person(message) if hints else message, err=err)


def report(envelope: dict[str, Any], as_json: bool = False, *, hints: bool = True) -> None:
    """The message, then the warnings on stderr; `--json` prints the whole envelope. A result that is not ok (a
    failed Local Pass, a broken chain) exits 1."""
    if as_json:
        echo_json(envelope)
    else:
        say(envelope["message"], hints=hints)
        for warning in envelope.get("warnings", []):
            say(f"warning: {warning}", err=True, hints=hints)
    if not envelope.get("ok", True):
        sys.exit(1)


def listing(
    envelope: dict[str, Any],
    as_json: bool,
    show: Callable[[Any], None],
    *,
    entries: str | None = None,
    hints: bool = True,
) -> None:
    """A listing command's output: the envelope as JSON, or its data as `show` prints it. When there is nothing to
    list (the data is an empty list, or `entries` names its empty list), the envelope's message says so instead, and
    often what to do first."""
    data = envelope["data"]
    listed = data.get(entries) if entries is not None and isinstance(data, dict) else data
    if as_json:
        echo_json(envelope)
    elif isinstance(listed, list) and not listed:
        say(envelope["message"], hints=hints)
    else:
        show(data)


@dataclass(frozen=True)
class Table:
    """Fixed-width columns, so a line printed as it streams (the audit tail) aligns with the ones before it.

    A positive width pads on the right, a negative one on the left, 0 prints the cell as it is (the last column).
    """

    widths: Sequence[int]
    gap: str = "  "

    def line(self, *cells: object) -> str:
        """The cells in their columns, without the padding an empty last cell would leave at the end."""
        return self.gap.join(_cell(cell, width) for cell, width in zip(cells, self.widths, strict=True)).rstrip()

    def echo(self, *cells: object) -> None:
        click.echo(self.line(*cells))


def _cell(value: object, width: int) -> str:
    if width > 0:
        return f"{value!s:<{width}}"
    if width < 0:
        return f"{value!s:>{-width}}"
    return str(value)


def fields(rows: Sequence[tuple[str, object]]) -> None:
    """`Label: value` lines, the values aligned one space after the longest label."""
    width = max(len(label) for label, _ in rows) + 2
    for label, value in rows:
        click.echo(f"{label + ':':<{width}}{value}")


def page(data: dict[str, Any], line: Callable[[dict[str, Any]], str], empty: str) -> None:
    """One page of the trail, newest first, and how to ask for the older one; `empty` when it holds no entry (a page
    of a filtered listing that the scan's budget cut short may be empty and still have an older one)."""
    if not data["entries"]:
        click.echo(empty)
    for entry in data["entries"]:
        click.echo(line(entry))
    if data["nextCursor"]:
        click.echo(f"(older: --before {data['nextCursor']})")
