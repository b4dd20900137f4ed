"""`saip shipyard ...`: shipped servers (validate, ship, run, status, logs, stop, delete) through the REST API (the
methods the saip_shipyard_* tools call), and the person's own: `saip shipyard token NAME`, a server's token, and
`saip shipyard export NAME`, its compose or Kubernetes files written into a folder."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import click

from saip.cli.commands import call, listed, on_name, segment
from saip.cli.output import Table, echo_json, fields, json_option, listing, report
from saip.cli.writes import whole_folder

SHIP_TIMEOUT = 660.0  # the gateway gives a ship 600 s: each knowledge tool's collection is snapshotted
RUN_TIMEOUT = 360.0
EXPORT_TIMEOUT = 150.0  # the gateway gives an export 120 s: the bundle's snapshots are part of it
SERVERS = Table((24, 4, 12, 12, 0))  # name, version, state, target, endpoint
SHIPPABLE = Table((32, 10, 3, 0))  # name, kind, risk, ready or why not
TARGETS = Table((12, 0))


def _shipyard(context: click.Context, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    return call(context, method, f"/shipyard{path}", **kwargs)


def _server(name: str, suffix: str = "") -> str:
    return f"/servers/{segment(name)}{suffix}"


@click.group()
def shipyard() -> None:
    """Shipped servers: standalone MCP servers of the tools built here (the saip_shipyard_* methods)."""


def _servers(data: list[dict[str, Any]]) -> None:
    for server in data:
        stale = "  (out of date)" if server["outOfDate"] else ""
        endpoint = (server["endpoint"] or "") + stale
        ran = server["runningEarlierVersion"]
        state = f"{server['state']} v{ran}" if ran else server["state"]
        SERVERS.echo(server["name"], f"v{server['version']}", state, server["target"] or "-", endpoint)


def _shippable(data: list[dict[str, Any]]) -> None:
    for tool in data:
        SHIPPABLE.echo(tool["name"], tool["kind"], tool["risk"], "ready" if tool["ready"] else tool["reason"])


def _targets(data: list[dict[str, Any]]) -> None:
    for target in data:
        TARGETS.echo(target["name"], "usable" if target["usable"] else f"{target['reason']}; {target['remedy']}")


def _proposal(name: str, description: str, tools: tuple[str, ...], stdio: bool) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "transport": "stdio" if stdio else "streamable-http",
        "tools": list(tools),
    }


proposal_options = [
    click.argument("name"),
    click.option("--description", required=True, help="What the server is for."),
    click.option("-t", "--tool", "tools", multiple=True, required=True, help="A tool it carries (repeat)."),
    click.option("--stdio", is_flag=True, help="Serve over stdio (its client starts it) instead of HTTP."),
]


def _with_proposal(command: Any) -> Any:
    for option in reversed(proposal_options):
        command = option(command)
    return command


@shipyard.command("validate")
@_with_proposal
@json_option
@click.pass_context
def shipyard_validate(
    context: click.Context, name: str, description: str, tools: tuple[str, ...], stdio: bool, as_json: bool
) -> None:
    """Check the server NAME with its tools, without shipping it."""
    report(_shipyard(context, "POST", "/validate", json=_proposal(name, description, tools, stdio)), as_json)


@shipyard.command("ship")
@_with_proposal
@json_option
@click.pass_context
def shipyard_ship(
    context: click.Context, name: str, description: str, tools: tuple[str, ...], stdio: bool, as_json: bool
) -> None:
    """Ship the server NAME with its tools: a new bundle version."""
    body = _proposal(name, description, tools, stdio)
    report(_shipyard(context, "POST", "/servers", json=body, timeout=SHIP_TIMEOUT), as_json)


Command = TypeVar("Command", bound=Callable[..., Any])


def run_target(command: Command) -> Command:
    """`--target` and `--port`: where `run` starts a server, and where `plan` says that run would."""
    port = click.option(
        "--port", type=click.IntRange(1024, 65535), help="Local target: the port; a free one when omitted."
    )
    target = click.option(
        "--target", type=click.Choice(["local", "compose", "kubernetes"]), default="local", show_default=True
    )
    return target(port(command))


@shipyard.command("plan")
@click.argument("name")
@run_target
@json_option
@click.pass_context
def shipyard_plan(context: click.Context, name: str, target: str, port: int | None, as_json: bool) -> None:
    """The exact command `saip shipyard run NAME` would run on a target, and why it would be refused; runs nothing."""
    params = {"target": target, **({"port": port} if port else {})}
    report(_shipyard(context, "GET", _server(name, "/plan"), params=params), as_json)


@shipyard.command("run")
@click.argument("name")
@run_target
@json_option
@click.pass_context
def shipyard_run(context: click.Context, name: str, target: str, port: int | None, as_json: bool) -> None:
    """Run the shipped server NAME on a target; `saip shipyard token NAME` then prints its bearer token."""
    body = {"target": target, "port": port}
    envelope = _shipyard(context, "POST", _server(name, "/run"), json=body, timeout=RUN_TIMEOUT)
    report(envelope, as_json)
    if target == "local" and not as_json:  # the message is the AI's, which is never given the token
        click.echo(f"Its bearer token: saip shipyard token {name}")


@shipyard.command("status")
@click.argument("name")
@json_option
@click.pass_context
def shipyard_status(context: click.Context, name: str, as_json: bool) -> None:
    """The state, endpoint, target and version of the shipped server NAME, and whether it is out of date."""

    def show(data: dict[str, Any]) -> None:
        fields(
            [
                ("Server", f"{data['name']} v{data['version']} ({data['transport']}, {data['risk']})"),
                ("State", data["state"] + (f", {data['restarts']} restarts" if data["restarts"] else "")),
                *(
                    [("Running", f"v{ran}; v{data['version']} is shipped and not running (stop, then run, serves it)")]
                    if (ran := data["runningEarlierVersion"])
                    else []
                ),
                ("Target", data["target"] or "-"),
                ("Endpoint", data["endpoint"] or "-"),
                ("Out of date", "; ".join(data["staleParts"]) if data["outOfDate"] else "no"),
                ("Withheld", "; ".join(data["withheld"]) or "none"),
                ("Last error", data["lastError"] or "-"),
            ]
        )

    listing(_shipyard(context, "GET", _server(name)), as_json, show)


@shipyard.command("logs")
@click.argument("name")
@click.option("-n", "--lines", type=click.IntRange(1, 1000), default=100, show_default=True)
@json_option
@click.pass_context
def shipyard_logs(context: click.Context, name: str, lines: int, as_json: bool) -> None:
    """The last lines the local shipped server NAME wrote (masked)."""
    listing(
        _shipyard(context, "GET", _server(name, "/logs"), params={"lines": lines}),
        as_json,
        lambda data: click.echo("\n".join(data["lines"])),
        entries="lines",
    )


@shipyard.command("token")
@click.argument("name")
@json_option
@click.pass_context
def shipyard_token(context: click.Context, name: str, as_json: bool) -> None:
    """The bearer token and endpoint of the running shipped server NAME, for your MCP client."""

    def show(data: dict[str, Any]) -> None:
        fields([("Endpoint", data["endpoint"]), ("Bearer token", data["token"])])

    listing(_shipyard(context, "GET", _server(name, "/token")), as_json, show)


@shipyard.command("export")
@click.argument("name")
@click.option("--target", type=click.Choice(["compose", "kubernetes"]), required=True)
@click.option("--port", type=click.IntRange(1024, 65535), help="Compose: the host port; 8383 when omitted.")
@click.option(
    "-o",
    "--into",
    type=click.Path(file_okay=False, path_type=Path),
    help="A new or empty folder to write them in; saip-shipped-NAME-TARGET when omitted.",
)
@json_option
@click.pass_context
def shipyard_export(
    context: click.Context, name: str, target: str, port: int | None, into: Path | None, as_json: bool
) -> None:
    """Write the compose project or Kubernetes manifests of the shipped server NAME, with its bundle and a bearer
    token of their own, into a folder, to apply on another host."""
    params: dict[str, Any] = {"target": target, **({"port": port} if port else {})}
    envelope = _shipyard(context, "GET", _server(name, "/export"), params=params, timeout=EXPORT_TIMEOUT)
    data = envelope["data"]
    folder = into or Path(data["folder"])
    _write(folder, data["files"])
    if as_json:
        echo_json(envelope)
        return
    click.echo(f"Wrote {len(data['files'])} files into {folder}.")
    click.echo(f"Apply them there with: {data['command']}")
    click.echo(f"Their bearer token is in {folder / 'token.env'}.")


def _write(folder: Path, files: list[dict[str, Any]]) -> None:
    """Each file under `folder`, with its mode, all or none (`writes.whole_folder`); a folder that holds anything
    already is refused, so nothing is overwritten, and so is a path that would leave it."""
    if folder.exists() and any(folder.iterdir()):
        raise click.ClickException(f"{folder} is not empty; name a new or empty folder with --into")
    for file in files:
        relative = PurePosixPath(file["path"])
        if relative.is_absolute() or ".." in relative.parts:
            raise click.ClickException(f"the export names a file outside its folder ({file['path']}); nothing written")
    with whole_folder(folder) as made:
        for file in files:
            path = folder / PurePosixPath(file["path"])
            for parent in reversed(path.relative_to(folder).parents[:-1]):
                if not (folder / parent).is_dir():
                    (folder / parent).mkdir()
                    made.append(folder / parent)
            content = file["content"]
            data = base64.b64decode(content) if file["encoding"] == "base64" else content.encode()
            # Created with its mode (the token's file is never readable by others, not even for a moment), never over
            # one.
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, int(file["mode"], 8))
            made.append(path)
            with os.fdopen(descriptor, "wb") as out:
                out.write(data)


for command in (
    listed("servers", "The shipped servers.", lambda context: _shipyard(context, "GET", "/servers"), _servers),
    listed(
        "shippable",
        "The tools a server can carry.",
        lambda context: _shipyard(context, "GET", "/shippable"),
        _shippable,
    ),
    listed("targets", "The run targets and why not.", lambda context: _shipyard(context, "GET", "/targets"), _targets),
    on_name(
        "stop",
        "Stop the running shipped server NAME.",
        lambda context, name: _shipyard(context, "POST", _server(name, "/stop"), timeout=RUN_TIMEOUT),
    ),
    on_name(
        "delete",
        "Delete the stopped shipped server NAME and every bundle version.",
        lambda context, name: _shipyard(context, "DELETE", _server(name)),
    ),
):
    shipyard.add_command(command)
