"""`saip audit ...`: the audit trail (the monitor area): management calls, published tool calls, the live tail and
the chain check; and the system view and the services' log lines."""

from __future__ import annotations

import json
from typing import Any

import click

from saip.cli.client import ApiError
from saip.cli.commands import api, call, refusal
from saip.cli.output import Table, json_option, listing, page, report
from saip.common.words import OUTCOMES, plural

CALL = Table((0, 24, 32, 11, 8, 0, 0))  # time, client, tool, level or source, outcome, duration and approval, summary
RISK = Table((0, 0, 4, 22, 0))  # time, "risk", severity, type, summary
PROCESS = Table((10, 12, 8, 14, 0))  # service, health, version, uptime, memory and sockets
limit_option = click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
tool_option = click.option("--tool", help="Only this tool.")
before_option = click.option("--before", type=click.IntRange(min=0), help="The nextCursor of the previous page.")


@click.group()
def audit() -> None:
    """The audit trail of every management call and published tool call."""


def line(entry: dict[str, Any]) -> str:
    """One entry of the trail: a management call, a published tool call or a risk event."""
    time = (entry.get("time") or "")[:19].replace("T", " ")
    if entry.get("kind") == "risk":
        return RISK.line(time, "risk", entry["severity"], entry["type"], entry["summary"])
    approval = f"  approval={entry['approval']}" if entry.get("approval") else ""
    kind = entry.get("level") or entry.get("source", "")  # a management call's level, a tool call's source
    took = f"{entry['durationMs']:>6} ms{approval}"
    summary = entry.get("summary", "")
    return CALL.line(time, entry.get("client", ""), entry["tool"], kind, entry["outcome"], took, summary)


@audit.command()
@click.option("-n", "--backlog", default=20, show_default=True, type=click.IntRange(1, 500), help="Entries first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
@click.pass_context
def tail(context: click.Context, backlog: int, as_json: bool) -> None:
    """Print the last entries, then every new one as it is chained (Ctrl-C stops)."""
    with api(context) as gateway:
        try:
            for entry in gateway.tail(backlog):
                click.echo(json.dumps(entry) if as_json else line(entry))
        except ApiError as exc:
            raise refusal(exc) from None
        except KeyboardInterrupt:
            return


@audit.command()
@limit_option
@tool_option
@click.option("--outcome", type=click.Choice(list(OUTCOMES.values())), help="Only this outcome.")
@before_option
@json_option
@click.pass_context
def log(
    context: click.Context, limit: int, tool: str | None, outcome: str | None, before: int | None, as_json: bool
) -> None:
    """Management calls, newest first."""
    query = {"limit": limit, "tool": tool, "outcome": outcome, "before": before}
    envelope = call(context, "GET", "/audit/management-log", params=_given(query))
    listing(envelope, as_json, lambda data: page(data, line, envelope["message"]))


@audit.command()
@limit_option
@tool_option
@before_option
@json_option
@click.pass_context
def calls(context: click.Context, limit: int, tool: str | None, before: int | None, as_json: bool) -> None:
    """Published tool calls (authored and knowledge tools), newest first."""
    query = {"limit": limit, "tool": tool, "before": before}
    envelope = call(context, "GET", "/audit/tool-calls", params=_given(query))
    listing(envelope, as_json, lambda data: page(data, line, envelope["message"]))


@audit.command()
@json_option
@click.pass_context
def verify(context: click.Context, as_json: bool) -> None:
    """Walk the hash chain; exit 1 and name the first broken link when it does not hold."""
    report(call(context, "GET", "/audit/verify"), as_json)


@audit.command()
@json_option
@click.pass_context
def system(context: click.Context, as_json: bool) -> None:
    """Each service's processes and health, NATS JetStream and its consumers' lag, the vector store."""

    def show(data: dict[str, Any]) -> None:
        for entry in data["services"]:
            for replica in entry["replicas"] or [{}]:
                PROCESS.echo(
                    entry["service"],
                    entry["health"],
                    replica.get("version", "-"),
                    f"up {replica['uptimeSeconds']:.0f} s" if replica else "no heartbeat",
                    _process(replica) if replica else "",
                )
        for consumer in data["nats"]["consumers"]:
            click.echo(f"consumer {consumer['stream']}/{consumer['name']}: {consumer['pending']} pending")
        click.echo(f"vector store: {data['vectorStore']['status']}")

    envelope = call(context, "GET", "/audit/system")
    if not as_json:
        click.echo(envelope["message"])
    listing(envelope, as_json, show)


@audit.command()
@click.option("--service", help="Only this service's lines.")
@click.option("--level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]), default="INFO")
@click.option("--text", help="Only lines containing this text.")
@click.option("-n", "--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@json_option
@click.pass_context
def logs(context: click.Context, service: str | None, level: str, text: str | None, limit: int, as_json: bool) -> None:
    """The last log lines of the services (or one), oldest first, secrets masked."""
    query = {"service": service, "level": level, "text": text, "limit": limit}
    envelope = call(context, "GET", "/audit/logs", params=_given(query))

    def show(data: dict[str, Any]) -> None:
        for entry in data["lines"]:
            click.echo(json.dumps(entry, ensure_ascii=False))

    listing(envelope, as_json, show, entries="lines")


def _process(replica: dict[str, Any]) -> str:
    """A process's memory and sockets, and the times `saip run` restarted its service before it, when it did."""
    shown = f"{replica['memoryBytes'] >> 20} MiB, {replica['openConnections']} sockets"
    restarts = replica.get("restarts", 0)
    return f"{shown}, restarted {plural(restarts, 'time')}" if restarts else shown


def _given(query: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in query.items() if value is not None}
