"""`saip`: the person's command line. `saip run` starts the local stack; the rest talks to the REST API, one file per
area (`status` and `token`, `approvals`, `audit`, `traces`, `tools`, `servers`, `expose`, `knowledge`, `shipyard`,
`chat`), printing through `saip.cli.output`."""

from __future__ import annotations

import sys

import click

from saip.cli.approvals import approvals
from saip.cli.audit import audit
from saip.cli.chat import chat
from saip.cli.client import default_admin_token, default_url
from saip.cli.commands import Target
from saip.cli.knowledge import knowledge
from saip.cli.shipyard import shipyard
from saip.cli.status import status, token
from saip.cli.tools import tools
from saip.cli.traces import traces
from saip.cli.upstream import expose, servers


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
    context.obj = Target(url, admin_token)


@cli.command()
def run() -> None:
    """Start NATS and every service as local processes; print the MCP URL and the tokens. Ctrl-C stops it all."""
    from saip.cli.stack import run as run_stack

    sys.exit(run_stack())


for command in (status, token, approvals, audit, traces, tools, servers, expose, knowledge, shipyard, chat):
    cli.add_command(command)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
