"""`saip audit ...`: the audit trail (the monitor area): management calls (the AI's and the person's), one of them
opened, their export, published tool calls, risk events, approval decisions, the live tail and the chain check; and
the system view and the services' log lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, BinaryIO

import click

from saip.cli.client import ApiError
from saip.cli.commands import api, call, refusal
from saip.cli.output import Table, fields, json_option, listing, page, report
from saip.cli.writes import whole_file
from saip.common import names
from saip.common.words import LEVELS, OUTCOMES, plural

CALL = Table((0, 24, 32, 11, 8, 0, 0))  # time, client, tool, level or source, outcome, duration and approval, summary
DECISION = Table((8, 14, 0))  # side, decision, count
RISK = Table((0, 0, 4, 22, 0))  # time, "risk", severity, type, summary
PROCESS = Table((10, 12, 8, 14, 0))  # service, health, version, uptime, memory and sockets
limit_option = click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
tool_option = click.option("--tool", help="Only this tool.")
before_option = click.option("--before", type=click.IntRange(min=0), help="The nextCursor of the previous page.")
FILTERS = ("tool", "client", "level", "outcome", "since", "until", "operator", "interface")


def filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """The management calls' filters, as the REST API takes them (every one given must match)."""
    for option in reversed(
        (
            tool_option,
            click.option("--client", help="Only this client: its name, or name and version ('person': the person)."),
            click.option("--level", type=click.Choice(list(LEVELS.values())), help="Only this level."),
            click.option("--outcome", type=click.Choice(list(OUTCOMES.values())), help="Only this outcome."),
            click.option(
                "--since", help="Only calls that arrived at this time or later (RFC 3339: 2026-12-05T10:00Z)."
            ),
            click.option("--until", help="Only calls that arrived before this time (RFC 3339)."),
            click.option(
                "--operator", type=click.Choice(list(names.OPERATORS)), help="Only the AI's, or the person's."
            ),
            click.option("--interface", type=click.Choice(list(names.INTERFACES)), help="Only through this interface."),
        )
    ):
        command = option(command)
    return command


@click.group()
def audit() -> None:
    """The audit trail of every management call and published tool call."""


def line(entry: dict[str, Any]) -> str:
    """One entry of the trail: a management call, a published tool call or a risk event."""
    time = (entry.get("time") or "")[:19].replace("T", " ")
    if entry.get("kind") == "risk":
        return RISK.line(time, "risk", entry["severity"], entry["type"], entry["summary"])
    approval = f"  approval={entry['approval']}" if entry.get("approval") else ""
    if entry.get("operator") == names.PERSON:
        approval += f"  by the person ({entry['interface']})"
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
@filter_options
@before_option
@json_option
@click.pass_context
def log(context: click.Context, /, limit: int, before: int | None, as_json: bool, **wanted: str | None) -> None:
    """Management calls, the AI's and the person's, newest first."""
    query = {"limit": limit, "before": before, **wanted}
    envelope = call(context, "GET", "/audit/management-log", params=_given(query))
    listing(envelope, as_json, lambda data: page(data, line, envelope["message"]))


@audit.command()
@click.argument("cursor", type=click.IntRange(min=1))
@json_option
@click.pass_context
def show(context: click.Context, cursor: int, as_json: bool) -> None:
    """One management call opened, by its cursor (a listing's `cursor`, the --before of `saip audit log`)."""
    envelope = call(context, "GET", f"/audit/management-log/{cursor}")

    def opened(data: dict[str, Any]) -> None:
        click.echo(envelope["message"])
        fields([(label, data[key]) for label, key in OPENED if data.get(key) not in (None, "")])

    listing(envelope, as_json, opened)


@audit.command()
@filter_options
@click.option("--format", "as_format", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default="-",
    help="Write it here, whole or not at all (default: stdout).",
)
@click.pass_context
def export(context: click.Context, /, as_format: str, output: Path, **wanted: str | None) -> None:
    """The management calls the filters keep, oldest first, as JSON lines or CSV."""
    # To a file, whole or not at all: a download that ends part way leaves no file that looks complete.
    into: AbstractContextManager[BinaryIO] = (
        nullcontext(sys.stdout.buffer) if str(output) == "-" else whole_file(output)
    )
    with api(context) as gateway, into as out:
        try:
            for chunk in gateway.download("/audit/export", _given({"format": as_format, **wanted})):
                out.write(chunk)
        except ApiError as exc:
            raise refusal(exc) from None


@audit.command()
@limit_option
@click.option("--type", "risk_type", help="Only this type (MANAGEMENT, sandbox-guard-blocked, poisoning-hit, ...).")
@before_option
@json_option
@click.pass_context
def risks(context: click.Context, limit: int, risk_type: str | None, before: int | None, as_json: bool) -> None:
    """Risk events, newest first: a MANAGEMENT event for every call that was not a successful read, and the signals
    the services raise."""
    query = {"limit": limit, "type": risk_type, "before": before}
    envelope = call(context, "GET", "/audit/risk-events", params=_given(query))
    tagged = lambda entry: line({"kind": "risk", **entry})  # noqa: E731 - one line, as the tail prints it
    listing(envelope, as_json, lambda data: page(data, tagged, envelope["message"]))


@audit.command()
@json_option
@click.pass_context
def hitl(context: click.Context, as_json: bool) -> None:
    """Approval decisions by side and decision, the approval rate, and how long the recent questions took."""
    envelope = call(context, "GET", "/audit/hitl")

    def show_decisions(data: dict[str, Any]) -> None:
        click.echo(envelope["message"])
        for side, decisions in data["decisions"].items():
            for decision, count in decisions.items():
                DECISION.echo(side, decision, count)
        times = data["answerTimes"]
        if times["answered"]:
            click.echo(
                f"answered in {times['p50Seconds']:g} s (median), {times['p90Seconds']:g} s (90th percentile), "
                f"{times['maxSeconds']:g} s at most, over the last {times['answered']} answers"
            )

    listing(envelope, as_json, show_decisions)


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


# What `saip audit show` prints of a call, in order.
OPENED = (
    ("time", "time"),
    ("client", "client"),
    ("operator", "operator"),
    ("interface", "interface"),
    ("level", "level"),
    ("outcome", "outcome"),
    ("duration", "durationMs"),
    ("approval", "approval"),
    ("answered by", "answeredVia"),
    ("summary", "summary"),
    ("arguments", "arguments"),
    ("result", "result"),
    ("trace", "traceId"),
)


def _given(query: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in query.items() if value is not None}
