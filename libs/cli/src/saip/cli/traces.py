"""`saip traces ...`: the recent traces the audit service keeps (the monitor area's saip_monitor_traces and
saip_monitor_trace_get): a listing filtered by tool, outcome and duration, and one trace as its span tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from saip.cli.commands import call, segment
from saip.cli.output import Table, json_option, listing, say
from saip.common.words import OUTCOMES

# start, duration, outcome, tool, name (as long as "mcp tools/call (no root yet)"), spans, id and services
TRACE = Table((19, -11, 8, 24, 28, -5, 0))
SPAN = Table((-10, -11, 10, 0))  # start offset, duration, service, the name indented by depth (and what failed)


@click.group()
def traces() -> None:
    """The recent traces: where the time of each MCP request went, across the services."""


def line(trace: dict[str, Any]) -> str:
    start = (trace.get("start") or "")[:19].replace("T", " ")
    name = trace["name"] if trace["complete"] else f"{trace['name']} (no root yet)"
    outcome = trace.get("outcome") or ("error" if trace["error"] else "-")
    took = f"{trace['durationMs']:.1f} ms"
    where = f"{trace['traceId']}  {','.join(trace['services'])}"
    return TRACE.line(start, took, outcome, trace.get("tool") or "-", name, trace["spanCount"], where)


def tree(spans: list[dict[str, Any]], depth: int = 0) -> Iterator[str]:
    """The spans as lines, each child under its parent and indented one step further, in order of start."""
    for span in spans:
        failed = f"  [error: {span['status'] or 'failed'}]" if span["error"] else ""
        yield SPAN.line(
            f"+{span['startOffsetMs']:.1f} ms",
            f"{span['durationMs']:.1f} ms",
            span["service"],
            "  " * depth + span["name"] + failed,
        )
        yield from tree(span["children"], depth + 1)


@traces.command("list")
@click.option("--tool", help="Only traces of calls of this tool.")
@click.option("--outcome", type=click.Choice(list(OUTCOMES.values())), help="Only calls that ended so.")
@click.option("--min-ms", type=click.FloatRange(min=0), default=0, help="Only traces that took at least this long.")
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@json_option
@click.pass_context
def list_traces(
    context: click.Context, tool: str | None, outcome: str | None, min_ms: float, limit: int, as_json: bool
) -> None:
    """The recent traces, newest first."""
    query = {"tool": tool, "outcome": outcome, "minDurationMs": min_ms, "limit": limit}
    envelope = call(context, "GET", "/traces", params={key: value for key, value in query.items() if value})

    def show(data: dict[str, Any]) -> None:
        say(envelope["message"])
        for trace in data["traces"]:
            click.echo(line(trace))

    listing(envelope, as_json, show)


@traces.command()
@click.argument("trace_id")
@json_option
@click.pass_context
def get(context: click.Context, trace_id: str, as_json: bool) -> None:
    """One trace as its span tree: each span's start after the trace's, its duration and its service."""
    envelope = call(context, "GET", f"/traces/{segment(trace_id)}")

    def show(data: dict[str, Any]) -> None:
        say(envelope["message"])
        for text in tree(data["spans"]):
            click.echo(text)
        if data["droppedSpans"]:
            click.echo(f"({data['droppedSpans']} more spans were not kept)")

    listing(envelope, as_json, show)
