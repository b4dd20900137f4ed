"""`saip`: the person's command line. `saip run` starts the local stack; the rest talks to the REST API."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from saip.cli.client import ApiError, GatewayApi, default_admin_token, default_url
from saip.cli.tools import tools

OUTCOMES = ["OK", "ERROR", "REFUSED", "DECLINED", "DENIED", "TIMEOUT"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", default=default_url, show_default="SAIP_GATEWAY_URL or http://127.0.0.1:8282", help="Gateway.")
@click.option(
    "--admin-token",
    default=default_admin_token,
    show_default="SAIP_ADMIN_TOKEN or $SAIP_HOME/admin-token",
    help="The REST API's bearer token.",
)
@click.pass_context
def cli(context: click.Context, url: str, admin_token: str | None) -> None:
    """Operate saip: the same methods the AI reaches through the saip_* tools."""
    context.obj = (url, admin_token)


def _api(context: click.Context) -> GatewayApi:
    url, token = context.obj
    try:
        return GatewayApi(url, token)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None


def _call(context: click.Context, action: Any) -> Any:
    with _api(context) as api:
        try:
            return action(api)
        except ApiError as exc:
            raise click.ClickException(str(exc)) from None


@cli.command()
def run() -> None:
    """Start NATS and every service as local processes; print the MCP URL and the tokens. Ctrl-C stops it all."""
    from saip.cli.stack import run as run_stack

    sys.exit(run_stack())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@click.pass_context
def status(context: click.Context, as_json: bool) -> None:
    """The gateway, its MCP token, the management surface and the services it depends on."""
    data = _call(context, lambda api: api.status())
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    management, token = data["management"], data["mcp"]["token"]
    surface = f"on ({len(management['tools'])} tools)" if management["surface"] else f"off: {management['reason']}"
    click.echo(f"MCP endpoint:     {data['mcp']['url']}")
    click.echo(f"MCP token:        {'set by ' + token['source'] if token['set'] else 'not set'}")
    click.echo(f"Management tools: {surface}")
    click.echo(f"Approval:         {management['approval']}, wait {management['approvalWaitSeconds']:g} s")
    click.echo("Services:         " + ", ".join(f"{name} {state}" for name, state in data["services"].items()))


@cli.group()
def token() -> None:
    """The MCP bearer token that turns the management tools on."""


@token.command()
@click.pass_context
def rotate(context: click.Context) -> None:
    """Generate a new MCP token (the old one stops working on every replica). It is shown once."""
    click.echo(_call(context, lambda api: api.rotate_token()))


@token.command()
@click.pass_context
def remove(context: click.Context) -> None:
    """Remove the MCP token: /mcp then serves published tools only, without the management tools."""
    _call(context, lambda api: api.remove_token())
    click.echo("MCP token removed; the management tools are gone from /mcp.")


@cli.group()
def audit() -> None:
    """The audit trail of every management call."""


def _line(entry: dict[str, Any]) -> str:
    time = (entry.get("time") or "")[:19].replace("T", " ")
    if entry.get("kind") == "risk":
        return f"{time}  risk  {entry['severity']:<4}  {entry['type']:<22}  {entry['summary']}"
    approval = f"  approval={entry['approval']}" if entry.get("approval") else ""
    return (
        f"{time}  {entry.get('client', ''):<24}  {entry['tool']:<32}  {entry.get('level', ''):<11}  "
        f"{entry['outcome']:<8}  {entry['durationMs']:>6} ms{approval}  {entry.get('summary', '')}"
    )


@audit.command()
@click.option("-n", "--backlog", default=20, show_default=True, type=click.IntRange(1, 500), help="Entries first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
@click.pass_context
def tail(context: click.Context, backlog: int, as_json: bool) -> None:
    """Print the last entries, then every new one as it is chained (Ctrl-C stops)."""
    with _api(context) as api:
        try:
            for entry in api.tail(backlog):
                click.echo(json.dumps(entry) if as_json else _line(entry))
        except ApiError as exc:
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt:
            return


@audit.command()
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@click.option("--tool", help="Only this tool.")
@click.option("--outcome", type=click.Choice(OUTCOMES), help="Only this outcome.")
@click.option("--before", type=click.IntRange(min=0), help="The nextCursor of the previous page.")
@click.pass_context
def log(context: click.Context, limit: int, tool: str | None, outcome: str | None, before: int | None) -> None:
    """Management calls, newest first."""
    page = _call(context, lambda api: api.management_log(limit=limit, tool=tool, outcome=outcome, before=before))
    for entry in page["entries"]:
        click.echo(_line(entry))
    if page["nextCursor"]:
        click.echo(f"(older: --before {page['nextCursor']})")


@audit.command()
@click.pass_context
def verify(context: click.Context) -> None:
    """Walk the hash chain; exit 1 and name the first broken link when it does not hold."""
    result = _call(context, lambda api: api.verify())
    if result["ok"]:
        click.echo(
            f"chain intact: {result['checked']} entries checked (#{result['firstIndex']}..#{result['lastIndex']})"
        )
        return
    broken = result["broken"]
    raise click.ClickException(
        f"chain broken at entry #{broken['index']} (cursor {broken['cursor']}): {broken['reason']}"
    )


cli.add_command(tools)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
