"""`saip`'s commands: the person's command line. `saip run` starts the local stack; the rest talks to the REST API,
one file per area (`status` and `token`, `approvals`, `clients`, `audit`, `traces`, `tools`, `servers`, `expose`,
`knowledge`, `shipyard`, `chat`), printing through `saip.cli.output`. The entry point is `saip.cli.main`, which starts
`saip run` without this module."""

from __future__ import annotations

import importlib

import click

from saip.cli.client import default_admin_token, default_url
from saip.cli.commands import Target
from saip.cli.launch import run_stack

# Each area's command, imported when it is run (or listed by --help): `saip run` starts the stack without importing
# the areas (protobuf among them), whose CPU would come before anything else starts (docs/BENCHMARKS.md, "Cold start").
AREAS = {
    "status": "saip.cli.status:status",
    "token": "saip.cli.status:token",
    "approvals": "saip.cli.approvals:approvals",
    "clients": "saip.cli.clients:clients",
    "audit": "saip.cli.audit:audit",
    "traces": "saip.cli.traces:traces",
    "tools": "saip.cli.tools:tools",
    "servers": "saip.cli.upstream:servers",
    "expose": "saip.cli.upstream:expose",
    "knowledge": "saip.cli.knowledge:knowledge",
    "shipyard": "saip.cli.shipyard:shipyard",
    "chat": "saip.cli.chat:chat",
}


class Areas(click.Group):
    """The `saip` group: its own commands (`run`), and each area's, loaded by name from AREAS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *AREAS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in AREAS:
            return super().get_command(ctx, cmd_name)
        module, name = AREAS[cmd_name].split(":")
        command = getattr(importlib.import_module(module), name)
        if not isinstance(command, click.Command):
            raise TypeError(f"{AREAS[cmd_name]} is not a click command; fix AREAS in saip.cli.group")
        return command


@click.group(cls=Areas, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--url", default=default_url, show_default="SAIP_GATEWAY_URL, else gateway.host and gateway.port", help="Gateway."
)
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
    run_stack()
