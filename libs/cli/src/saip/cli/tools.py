"""`saip tools ...`: Tool Studio from the command line, through the REST API (the methods saip_tools_* call)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from saip.cli.commands import call, on_name, segment
from saip.cli.output import Table, echo_json, json_option, listing, report

STUDIO_TIMEOUT = 120.0  # a Local Pass runs the tool's code in the sandbox
TOOLS = Table((28, 21, 3, 13, 7, 0), gap=" ")  # name, state, risk, source, served, network


def _studio(context: click.Context, method: str, path: str = "", **kwargs: Any) -> dict[str, Any]:
    return call(context, method, f"/tools{path}", timeout=STUDIO_TIMEOUT, **kwargs)


def spec_of(source: str) -> dict[str, Any]:
    """The tool spec in the file `source` (`-`: stdin), or the error that says what to give instead."""
    try:
        text = sys.stdin.buffer.read().decode("utf-8") if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"Cannot read {source}: {reason}. Give a file holding a tool spec, or - for stdin."
        raise click.ClickException(message) from None
    except UnicodeDecodeError:
        raise click.ClickException(f"{source} is not UTF-8 text; a tool spec is JSON.") from None
    return json_object(
        text,
        lambda exc: f"{source} is not JSON: {exc.msg} at line {exc.lineno}",
        f"{source} must hold one tool spec (a JSON object)",
    )


def arguments_of(text: str) -> dict[str, Any]:
    """A trial run's `--args`: one JSON object, or the error that shows what to give instead."""
    example = """for instance --args '{"text": "one two"}'"""
    return json_object(
        text,
        lambda exc: f"--args is not JSON ({exc.msg} at column {exc.colno}): {example}",
        f"--args must be a JSON object of the tool's arguments: {example}",
    )


def json_object(text: str, not_json: Callable[[json.JSONDecodeError], str], not_an_object: str) -> dict[str, Any]:
    """`text` as one JSON object, or the ClickException that says what it is instead."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(not_json(exc)) from None
    if not isinstance(value, dict):
        raise click.ClickException(not_an_object)
    return value


@click.group()
def tools() -> None:
    """Tool Studio: authored JavaScript tools, their Local Pass, publishing and exposure."""


@tools.command("list")
@click.option("--bundled", is_flag=True, help="Include the bundled starter tools.")
@json_option
@click.pass_context
def list_tools(context: click.Context, bundled: bool, as_json: bool) -> None:
    """The tools with state, risk, network mode and whether /mcp serves them."""
    envelope = _studio(context, "GET", params={"includeBundled": str(bundled).lower()})

    def show(found: list[dict[str, Any]]) -> None:
        for tool in found:
            TOOLS.echo(*row_of(tool))

    listing(envelope, as_json, show)


def row_of(tool: dict[str, Any]) -> list[str]:
    """A listed tool's columns: name, state, risk, source, whether /mcp serves it, and its sandbox's network named as
    such (a bare 'blocked' beside 'served' read as if the tool were)."""
    hosts = tool["network"]["hosts"]
    network = f"network {tool['network']['mode']}" + (f" {','.join(hosts)}" if hosts else "")
    served = "served" if tool["servedOnMcp"] else "-"
    return [tool["name"], tool["state"], tool["risk"], tool["source"], served, network]


@tools.command()
@click.argument("name")
@json_option
@click.pass_context
def get(context: click.Context, name: str, as_json: bool) -> None:
    """Print a tool: its spec, state, revision, last Local Pass and risk (JSON; --json adds the envelope)."""
    listing(_studio(context, "GET", f"/{segment(name)}"), as_json, echo_json)


@tools.command()
@click.argument("spec_file")
@click.option("--revision", type=click.IntRange(min=0), default=0, help="The revision you read (updating a draft).")
@json_option
@click.pass_context
def save(context: click.Context, spec_file: str, revision: int, as_json: bool) -> None:
    """Save a draft from SPEC_FILE (a tool spec in JSON; - reads stdin)."""
    body = {"spec": spec_of(spec_file), "expectedRevision": revision}
    report(_studio(context, "POST", json=body), as_json)


@tools.command()
@click.argument("name")
@click.option("--args", "arguments", help="Arguments as a JSON object for a trial run; without it, the Local Pass.")
@json_option
@click.pass_context
def test(context: click.Context, name: str, arguments: str | None, as_json: bool) -> None:
    """Run the Local Pass of NAME (or a trial run with --args)."""
    body: dict[str, Any] = {}
    if arguments is not None:
        body["arguments"] = arguments_of(arguments)
    envelope = _studio(context, "POST", f"/{segment(name)}/test", json=body or None)
    if not as_json:
        data = envelope["data"]
        for line in data["console"]:
            click.echo(f"console: {line}")
        if data["passed"]:
            echo_json(data["result"])
    report(envelope, as_json)


@tools.command()
@click.argument("name", required=False)
@click.option("--file", "spec_file", help="Assess an unsaved spec from this file instead (- reads stdin).")
@json_option
@click.pass_context
def risk(context: click.Context, name: str | None, spec_file: str | None, as_json: bool) -> None:
    """The risk level of a saved tool NAME, or of an unsaved spec (--file)."""
    if (name is None) == (spec_file is None):
        raise click.UsageError("give a tool NAME or --file SPEC_FILE")
    body = {"name": name} if name else {"spec": spec_of(str(spec_file))}
    report(_studio(context, "POST", "/risk", json=body), as_json)


@tools.command()
@click.option("--auto/--no-auto", "auto", default=None, help="Serve every newly published tool (or not).")
@click.option("--tool", "names", multiple=True, help="A tool to serve explicitly (repeat); replaces the list.")
@json_option
@click.pass_context
def exposure(context: click.Context, auto: bool | None, names: tuple[str, ...], as_json: bool) -> None:
    """Show which tools /mcp serves; with --auto/--no-auto or --tool, change it."""
    current = _studio(context, "GET", "/exposure")
    if auto is None and not names:
        report(current, as_json)
        return
    setting = current["data"]
    body = {
        "autoExpose": setting["autoExpose"] if auto is None else auto,
        "tools": list(names) if names else setting["tools"],
        "expectedRevision": setting["revision"],
    }
    report(_studio(context, "PUT", "/exposure", json=body), as_json)


@tools.command()
@click.argument("name")
@click.option("--dry-run", is_flag=True, help="Only show what publishing would do, and at which risk.")
@json_option
@click.pass_context
def publish(context: click.Context, name: str, dry_run: bool, as_json: bool) -> None:
    """Publish NAME (it must have passed its Local Pass); --dry-run shows what would change, and at which risk."""
    report(_studio(context, "GET" if dry_run else "POST", f"/{segment(name)}/publish"), as_json)


tools.add_command(
    on_name(
        "delete",
        "Delete the draft or published tool NAME.",
        lambda context, name: _studio(context, "DELETE", f"/{segment(name)}"),
    )
)
