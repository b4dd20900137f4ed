"""`saip tools ...`: Tool Studio from the command line, through the REST API (the methods saip_tools_* call)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from saip.cli.client import ApiError, GatewayApi


def _studio(context: click.Context, method: str, path: str = "", **kwargs: Any) -> dict[str, Any]:
    url, token = context.obj
    try:
        with GatewayApi(url, token, timeout=120.0) as api:
            return api.tools(method, path, **kwargs)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None


def _report(envelope: dict[str, Any], as_json: bool) -> None:
    """The message, then the warnings; `--json` prints the whole envelope. A result that is not ok exits 1."""
    if as_json:
        click.echo(json.dumps(envelope, indent=2, ensure_ascii=False))
    else:
        click.echo(envelope["message"])
        for warning in envelope.get("warnings", []):
            click.echo(f"warning: {warning}", err=True)
    if not envelope.get("ok", True):
        sys.exit(1)


def _spec(source: str) -> dict[str, Any]:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{source} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(value, dict):
        raise click.ClickException(f"{source} must hold one tool spec (a JSON object)")
    return value


as_json_option = click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")


@click.group()
def tools() -> None:
    """Tool Studio: authored JavaScript tools, their Local Pass, publishing and exposure."""


@tools.command("list")
@click.option("--bundled", is_flag=True, help="Include the bundled starter tools.")
@as_json_option
@click.pass_context
def list_tools(context: click.Context, bundled: bool, as_json: bool) -> None:
    """The tools with state, risk, network mode and whether /mcp serves them."""
    envelope = _studio(context, "GET", params={"includeBundled": str(bundled).lower()})
    if as_json:
        _report(envelope, True)
        return
    for tool in envelope["data"]:
        served = "served" if tool["servedOnMcp"] else "-"
        network = tool["network"]["mode"] + (
            f" {','.join(tool['network']['hosts'])}" if tool["network"]["hosts"] else ""
        )
        click.echo(
            f"{tool['name']:<28} {tool['state']:<21} {tool['risk']:<3} {tool['source']:<13} {served:<7} {network}"
        )
    if not envelope["data"]:
        click.echo(envelope["message"])


@tools.command()
@click.argument("name")
@click.pass_context
def get(context: click.Context, name: str) -> None:
    """Print a tool: its spec, state, revision, last Local Pass and risk (JSON)."""
    click.echo(json.dumps(_studio(context, "GET", f"/{name}")["data"], indent=2, ensure_ascii=False))


@tools.command()
@click.argument("spec_file")
@click.option("--revision", type=click.IntRange(min=0), default=0, help="The revision you read (updating a draft).")
@as_json_option
@click.pass_context
def save(context: click.Context, spec_file: str, revision: int, as_json: bool) -> None:
    """Save a draft from SPEC_FILE (a tool spec in JSON; - reads stdin)."""
    body = {"spec": _spec(spec_file), "expectedRevision": revision}
    _report(_studio(context, "POST", json=body), as_json)


@tools.command()
@click.argument("name")
@click.option("--args", "arguments", help="Arguments as a JSON object for a trial run; without it, the Local Pass.")
@as_json_option
@click.pass_context
def test(context: click.Context, name: str, arguments: str | None, as_json: bool) -> None:
    """Run the Local Pass of NAME (or a trial run with --args)."""
    body: dict[str, Any] = {}
    if arguments is not None:
        try:
            body["arguments"] = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"--args is not JSON: {exc.msg}") from None
    envelope = _studio(context, "POST", f"/{name}/test", json=body or None)
    if not as_json:
        data = envelope["data"]
        for line in data["console"]:
            click.echo(f"console: {line}")
        if data["passed"]:
            click.echo(json.dumps(data["result"], indent=2, ensure_ascii=False))
    _report(envelope, as_json)


@tools.command()
@click.argument("name")
@as_json_option
@click.pass_context
def publish(context: click.Context, name: str, as_json: bool) -> None:
    """Publish NAME (it must have passed its Local Pass)."""
    _report(_studio(context, "POST", f"/{name}/publish"), as_json)


@tools.command()
@click.argument("name")
@as_json_option
@click.pass_context
def delete(context: click.Context, name: str, as_json: bool) -> None:
    """Delete the draft or published tool NAME."""
    _report(_studio(context, "DELETE", f"/{name}"), as_json)


@tools.command()
@click.argument("name", required=False)
@click.option("--file", "spec_file", help="Assess an unsaved spec from this file instead (- reads stdin).")
@as_json_option
@click.pass_context
def risk(context: click.Context, name: str | None, spec_file: str | None, as_json: bool) -> None:
    """The risk level of a saved tool NAME, or of an unsaved spec (--file)."""
    if (name is None) == (spec_file is None):
        raise click.UsageError("give a tool NAME or --file SPEC_FILE")
    body = {"name": name} if name else {"spec": _spec(str(spec_file))}
    _report(_studio(context, "POST", "/risk", json=body), as_json)


@tools.command()
@click.option("--auto/--no-auto", "auto", default=None, help="Serve every newly published tool (or not).")
@click.option("--tool", "names", multiple=True, help="A tool to serve explicitly (repeat); replaces the list.")
@as_json_option
@click.pass_context
def exposure(context: click.Context, auto: bool | None, names: tuple[str, ...], as_json: bool) -> None:
    """Show which tools /mcp serves; with --auto/--no-auto or --tool, change it."""
    if auto is None and not names:
        _report(_studio(context, "GET", "/exposure"), as_json)
        return
    current = _studio(context, "GET", "/exposure")["data"]
    body = {
        "autoExpose": current["autoExpose"] if auto is None else auto,
        "tools": list(names) if names else current["tools"],
        "expectedRevision": current["revision"],
    }
    _report(_studio(context, "PUT", "/exposure", json=body), as_json)
