"""`saip approvals ...`: the questions clients that cannot ask are waiting on (management.out-of-band-approvals),
and the person's answer to each, through the REST API with the admin token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import click

from saip.cli.commands import call, on_name
from saip.cli.output import Table, json_option, listing

WAITING = Table((26, 30, 8, 0))  # id, tool, seconds left, the question


@click.group(invoke_without_command=True)
@json_option
@click.pass_context
def approvals(context: click.Context, as_json: bool) -> None:
    """The questions waiting for your answer, with the text an eliciting client would show; approve or decline one
    by its id."""
    if context.invoked_subcommand is not None:
        return

    def show(data: dict[str, Any]) -> None:
        for question in data["approvals"]:
            WAITING.echo(question["id"], question["tool"], f"{question['secondsLeft']} s", question["question"])

    # The questions are about the AI's calls: the tools they name are what it called, not what to call.
    listing(call(context, "GET", "/approvals"), as_json, show, entries="approvals", hints=False)


def _answer(verb: str) -> Callable[[click.Context, str], dict[str, Any]]:
    def send(context: click.Context, question_id: str) -> dict[str, Any]:
        return call(context, "POST", f"/approvals/{quote(question_id, safe='')}/{verb}")

    return send


approvals.add_command(
    on_name(
        "approve",
        "Approve the question NAME (its id): its call runs, exactly as it describes.",
        _answer("approve"),
        hints=False,
    )
)
approvals.add_command(
    on_name("decline", "Decline the question NAME (its id): its call does not run.", _answer("decline"), hints=False)
)
