"""`saip approvals ...`: the person's inbox (management.out-of-band-approvals): the questions waiting for them, from
clients that cannot ask or whose answers no person gave, the recent answers to every question, and the person's answer
to one, through the REST API with the admin token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from saip.cli.commands import call, on_name, segment
from saip.cli.output import Table, echo_json, json_option, say

WAITING = Table((32, 11, 7, 0))  # id, level, seconds left, the question (which names the client and the tool)
ANSWERED = Table((19, 30, 13, 13, 0))  # when, tool, decision, who answered, how long it took


@click.group(invoke_without_command=True)
@json_option
@click.pass_context
def approvals(context: click.Context, as_json: bool) -> None:
    """The questions waiting for your answer, with the text an eliciting client would show, and the recent answers to
    every question (yours, and those the clients gave); approve or decline one by its id."""
    if context.invoked_subcommand is not None:
        return
    envelope = call(context, "GET", "/approvals")
    if as_json:
        echo_json(envelope)
        return
    data = envelope["data"]
    # The questions are about the AI's calls: the tools they name are what it called, not what to call.
    say(envelope["message"], hints=False)
    for question in data["approvals"]:
        WAITING.echo(question["id"], question["level"] or "", f"{question['secondsLeft']} s", question["question"])
    if data["answered"]:
        click.echo("Recent answers:")
    for answer in data["answered"] or []:
        at = (answer["answeredAt"] or answer["time"] or "")[:19].replace("T", " ")
        who = answer["answeredVia"] or "nobody"
        ANSWERED.echo(at, answer["tool"], answer["decision"], who, f"{answer['secondsToAnswer']:g} s")
    for warning in envelope["warnings"]:
        say(f"warning: {warning}", err=True, hints=False)


def _answer(verb: str) -> Callable[[click.Context, str], dict[str, Any]]:
    def send(context: click.Context, question_id: str) -> dict[str, Any]:
        return call(context, "POST", f"/approvals/{segment(question_id)}/{verb}")

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
