"""`saip status` and `saip token ...`: the gateway, its MCP token and the management surface."""

from __future__ import annotations

from typing import Any

import click

from saip.cli.client import ApiError
from saip.cli.commands import api, call
from saip.cli.hints import for_person
from saip.cli.output import fields, json_option, listing, report
from saip.common.words import plural

# Where the MCP token in force comes from, as the gateway names it.
TOKEN_SOURCES = {
    "api": "set through the API (saip token rotate)",
    "configuration": "set in the configuration (mcp-server.auth-token)",
}


@click.command()
@json_option
@click.pass_context
def status(context: click.Context, as_json: bool) -> None:
    """The gateway, its MCP token, the management surface, the services it depends on and their restarts."""

    def show(data: dict[str, Any]) -> None:
        management, token = data["management"], data["mcp"]["token"]
        surface = f"on ({len(management['tools'])} tools)" if management["surface"] else f"off: {management['reason']}"
        fields(
            [
                ("MCP endpoint", data["mcp"]["url"]),
                (
                    "MCP token",
                    TOKEN_SOURCES.get(token["source"], f"set by {token['source']}") if token["set"] else "not set",
                ),
                ("Credentials", credentials(data["mcp"]["credentials"])),
                ("Management tools", surface),
                ("Published tools", ", ".join(tool["name"] for tool in data["mcp"]["published"]) or "none"),
                ("Approval", f"{management['approval']}, wait {management['approvalWaitSeconds']:g} s"),
                ("Services", ", ".join(f"{name} {state}" for name, state in data["services"].items())),
                ("Restarts", restarts(context)),
            ]
        )

    listing(call(context, "GET", "/status"), as_json, show)


def restarts(context: click.Context) -> str:
    """How many times `saip run` restarted each service that it did restart, from the services' heartbeats (the
    highest count among a service's processes: a process that ended beats on for a few seconds); what kept them
    from being read, when they could not be (NATS away)."""
    with api(context) as gateway:
        try:
            system = gateway.call("GET", "/audit/system")["data"]
        except ApiError as exc:
            return f"unknown: {for_person(str(exc))}"
    counts = {
        entry["service"]: max((replica.get("restarts", 0) for replica in entry["replicas"]), default=0)
        for entry in system["services"]
    }
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()) if count) or "none"


def credentials(on: dict[str, Any]) -> str:
    """Which credentials /mcp accepts, in words: `shared token, 2 named tokens, OAuth (dynamic registration on)`."""
    said = ["shared token"] if on["shared"] else []
    if on["named"]:
        said.append(plural(on["named"], "named token"))
    if on["oauth"]:
        said.append(f"OAuth (dynamic registration {'on' if on['dynamicRegistration'] else 'off'})")
    return ", ".join(said) or "none: /mcp serves the published tools to anyone who reaches it"


@click.group()
def token() -> None:
    """The MCP bearer token that turns the management tools on."""


@token.command()
@click.pass_context
def rotate(context: click.Context) -> None:
    """Generate a new MCP token (the old one stops working on every replica). It is shown once, alone on stdout."""
    click.echo(call(context, "POST", "/mcp-token")["data"]["token"])


@token.command()
@json_option
@click.pass_context
def remove(context: click.Context, as_json: bool) -> None:
    """Remove the MCP token: /mcp then serves published tools only, without the management tools."""
    report(call(context, "DELETE", "/mcp-token"), as_json)
