"""`saip servers ...` and `saip expose ...`: upstream MCP servers and their exposure on /mcp from the command line,
through the REST API (the methods the saip_mcp_* and saip_expose_* tools call)."""

from __future__ import annotations

from typing import Any

import click

from saip.cli.commands import call, segment
from saip.cli.output import Table, json_option, listing, report

CONNECT_TIMEOUT = 60.0  # a registration or a test connects to the upstream once
SERVERS = Table((20, 16, 11, 3, 0), gap=" ")  # id, transport, state, risk, where
EXPOSED = Table((28, 28, 4, 4, 0), gap=" ")  # name, server/tool, hitl, risk, served or why not


@click.group()
def servers() -> None:
    """Upstream MCP servers: the catalog, registration, connection state and risk."""


@servers.command("list")
@json_option
@click.pass_context
def list_servers(context: click.Context, as_json: bool) -> None:
    """The registered servers with transport, state, risk and URL or command."""
    envelope = call(context, "GET", "/servers")

    def show(found: list[dict[str, Any]]) -> None:
        for server in found:
            where = server["url"] or " ".join([server["command"], *server["args"]])
            state = server["state"] + (f" ({server['reason']})" if server["reason"] else "")
            SERVERS.echo(server["id"], server["transport"], state, server["risk"], where)

    listing(envelope, as_json, show)


@servers.command()
@click.argument("query", default="")
@json_option
@click.pass_context
def catalog(context: click.Context, query: str, as_json: bool) -> None:
    """Search the shipped catalog by words (all of it without QUERY)."""
    envelope = call(context, "GET", "/servers/catalog", params={"query": query})

    def show(found: list[dict[str, Any]]) -> None:
        for entry in found:
            click.echo(f"{entry['name']:<12} {entry['trust']:<10} {entry['transport']:<16} {entry['description']}")

    listing(envelope, as_json, show)


@servers.command()
@click.argument("server_id")
@json_option
@click.pass_context
def tools(context: click.Context, server_id: str, as_json: bool) -> None:
    """A server's tools with their risk, poisoning hits and fingerprint state."""
    envelope = call(context, "GET", f"/servers/{segment(server_id)}/tools")

    def show(found: dict[str, Any]) -> None:
        for listed in found["tools"]:
            hits = f" poisoning: {', '.join(listed['poisoning'])}" if listed["poisoning"] else ""
            click.echo(f"{listed['name']:<28} {listed['risk']:<3} {listed['fingerprint']}{hits}")
            if listed["riskReasons"]:  # what raised its level: what to change to bring it under the cap
                click.echo(f"    {'; '.join(listed['riskReasons'])}")

    listing(envelope, as_json, show, entries="tools")


@servers.command("add")
@click.argument("server_id")
@click.option("--catalog", "catalog_name", help="Register this catalog entry under SERVER_ID.")
@click.option("--url", default="", help="The endpoint (streamable-http, sse).")
@click.option("--transport", type=click.Choice(["streamable-http", "sse", "stdio"]), default="streamable-http")
@click.option("--command", "command", default="", help="The program to run (stdio).")
@click.option("--arg", "args", multiple=True, help="An argument of the stdio command (repeat).")
@click.option("--header", "headers", multiple=True, help="NAME=${ENV} (repeat).")
@click.option("--env", "env", multiple=True, help="NAME=${ENV} for a stdio server (repeat).")
@click.option("--docs-url", default="", help="Where its documentation is.")
@json_option
@click.pass_context
def add(
    context: click.Context,
    server_id: str,
    catalog_name: str | None,
    url: str,
    transport: str,
    command: str,
    args: tuple[str, ...],
    headers: tuple[str, ...],
    env: tuple[str, ...],
    docs_url: str,
    as_json: bool,
) -> None:
    """Register a server: from the catalog (--catalog) or custom; values of --header and --env are ${ENV} references."""
    given = {"headers": pairs(headers), "env": pairs(env)}
    if catalog_name:
        body: dict[str, Any] = {"catalogName": catalog_name, "serverId": server_id, **given}
        report(call(context, "POST", "/servers/catalog", json=body, timeout=CONNECT_TIMEOUT), as_json)
        return
    body = {"id": server_id, "transport": transport, "url": url, "command": command, "args": list(args)}
    body |= {**given, "docsUrl": docs_url}
    report(call(context, "POST", "/servers", json=body, timeout=CONNECT_TIMEOUT), as_json)


@servers.command()
@click.argument("server_id")
@json_option
@click.pass_context
def reconnect(context: click.Context, server_id: str, as_json: bool) -> None:
    """Drop a server's connection and connect again now."""
    report(call(context, "POST", f"/servers/{segment(server_id)}/reconnect", timeout=CONNECT_TIMEOUT), as_json)


@servers.command()
@click.argument("server_id")
@json_option
@click.pass_context
def remove(context: click.Context, server_id: str, as_json: bool) -> None:
    """Remove a server; its exposed tools leave /mcp."""
    report(call(context, "DELETE", f"/servers/{segment(server_id)}"), as_json)


@click.group()
def expose() -> None:
    """Upstream tools composed onto /mcp: HITL, the cap, changed definitions."""


@expose.command("list")
@json_option
@click.pass_context
def list_exposed(context: click.Context, as_json: bool) -> None:
    """The exposed tools: server and tool, HITL, effective risk, served or why withheld."""
    envelope = call(context, "GET", "/exposure")

    def show(found: dict[str, Any]) -> None:
        for tool in found["tools"]:
            served = "served" if tool["served"] else f"withheld: {tool['withheld']}"
            hitl = "hitl" if tool["hitl"] else "-"
            EXPOSED.echo(tool["name"], f"{tool['serverId']}/{tool['tool']}", hitl, tool["effectiveRisk"], served)

    listing(envelope, as_json, show, entries="tools")


def change_body(
    add: tuple[str, ...], remove: tuple[str, ...], accept: tuple[str, ...], no_hitl: bool
) -> dict[str, Any]:
    """The body of POST /exposure from the options: members as SERVER/TOOL or SERVER/TOOL=ALIAS."""
    members = []
    for member in add:
        server_id, _, rest = member.partition("/")
        tool, _, alias = rest.partition("=")
        if not server_id or not tool:
            raise click.BadParameter(f"'{member}' is not SERVER/TOOL or SERVER/TOOL=ALIAS", param_hint="--add")
        members.append({"serverId": server_id, "tool": tool, "alias": alias, "hitl": not no_hitl})
    return {"add": members, "remove": list(remove), "acknowledgeChanged": list(accept)}


@expose.command()
@click.option("--add", "add", multiple=True, help="SERVER/TOOL or SERVER/TOOL=ALIAS to serve (repeat).")
@click.option("--remove", "remove", multiple=True, help="A name on /mcp to stop serving (repeat).")
@click.option("--accept", "accept", multiple=True, help="A name whose changed definition you accept (repeat).")
@click.option("--no-hitl", is_flag=True, help="Serve the added tools without asking before each call.")
@click.option("--dry-run", is_flag=True, help="Only show the plan.")
@json_option
@click.pass_context
def apply(
    context: click.Context,
    add: tuple[str, ...],
    remove: tuple[str, ...],
    accept: tuple[str, ...],
    no_hitl: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Change what /mcp serves of the upstream tools (--dry-run shows the plan: names, refusals, diffs)."""
    body = change_body(add, remove, accept, no_hitl)
    report(call(context, "POST", "/exposure/plan" if dry_run else "/exposure", json=body), as_json)


def pairs(values: tuple[str, ...]) -> dict[str, str]:
    """NAME=${ENV} options as a mapping."""
    found = {}
    for value in values:
        name, sign, reference = value.partition("=")
        if not sign or not name:
            raise click.BadParameter(f"'{value}' is not NAME=${{ENV}}")
        found[name] = reference
    return found
