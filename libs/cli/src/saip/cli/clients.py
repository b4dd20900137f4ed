"""`saip clients ...`: every client /mcp accepts (the shared token, named tokens, OAuth grants) with its use, a named
token made for one client, and a credential revoked, through the REST API with the admin token."""

from __future__ import annotations

from typing import Any

import click

from saip.cli.commands import call, on_name, segment
from saip.cli.output import Table, json_option, listing, report

CLIENTS = Table((12, 12, 7, 24, 20, 6, 0))  # id, kind, grant, name, last seen, calls/questions last hour, client


@click.group(invoke_without_command=True)
@json_option
@click.pass_context
def clients(context: click.Context, as_json: bool) -> None:
    """The clients /mcp accepts: each credential's kind, grant, when it was last seen and its calls and questions in
    the last hour. Same as `saip clients list`."""
    if context.invoked_subcommand is None:
        _list(context, as_json)


@clients.command("list")
@json_option
@click.pass_context
def list_clients(context: click.Context, as_json: bool) -> None:
    """Every client /mcp accepts, with its use in the last hour."""
    _list(context, as_json)


def _list(context: click.Context, as_json: bool) -> None:
    def show(data: dict[str, Any]) -> None:
        CLIENTS.echo("ID", "KIND", "GRANT", "NAME", "LAST SEEN", "HOUR", "CLIENT")
        for client in data["clients"]:
            seen = (client["lastSeen"] or "never")[:19].replace("T", " ")
            hour = f"{client['callsLastHour']}/{client['questionsLastHour']}"
            where = client["client"]["host"] if client["client"] else (client["source"] or "")
            CLIENTS.echo(client["id"], client["kind"], client["grant"], client["name"], seen, hour, where)

    listing(call(context, "GET", "/clients"), as_json, show, entries="clients")


@clients.command()
@click.argument("name")
@click.option(
    "--scope",
    type=click.Choice(["tools", "manage"]),
    default="tools",
    show_default=True,
    help="tools: the published tools only; manage: the management surface (saip_* tools) as well.",
)
@click.pass_context
def add(context: click.Context, name: str, scope: str) -> None:
    """Make a named token for the client NAME (one that takes a header: Claude Code, Cursor, VS Code, Codex CLI). It
    is shown once, alone on stdout; `saip clients list` shows its id."""
    click.echo(call(context, "POST", "/clients", json={"name": name, "scope": scope})["data"]["token"])


def _revoke(context: click.Context, credential_id: str) -> dict[str, Any]:
    return call(context, "DELETE", f"/clients/{segment(credential_id)}")


clients.add_command(
    on_name(
        "revoke",
        "Revoke the client NAME (its id, as `saip clients list` shows it): every replica refuses its token within a "
        "second.",
        _revoke,
    )
)


@clients.command()
@json_option
@click.pass_context
def connect(context: click.Context, as_json: bool) -> None:
    """How each AI client connects to this gateway's /mcp: the steps and what to paste."""

    def show(data: dict[str, Any]) -> None:
        for snippet in data["snippets"]:
            click.echo(f"{snippet['client']} ({'sign in with OAuth' if snippet['auth'] == 'oauth' else 'a token'})")
            for step in snippet["steps"]:
                click.echo(f"  - {step}")
            if snippet["config"]:
                click.echo("\n".join(f"    {line}" for line in snippet["config"].splitlines()))
            click.echo()

    envelope = call(context, "GET", "/clients/snippets")
    if as_json:
        report(envelope, True)
    else:
        show(envelope["data"])
