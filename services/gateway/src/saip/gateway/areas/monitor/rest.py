"""The person's side of the monitor area under /api/v1/audit: the monitor tools' methods, one management call
opened, the chain check, the live tail and the export of a filtered range (the routes that stream: NDJSON, one
record a line, or CSV); and the recent traces under /api/v1/traces."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import StreamingResponse

from saip.gateway.areas.monitor.contribution import (
    TRACE_ID,
    CallsFilter,
    HitlInput,
    LogsTailInput,
    ManagementLogInput,
    MonitorArea,
    RiskEventsInput,
    ToolCallsInput,
    TraceGetInput,
    TracesInput,
)
from saip.gateway.areas.monitor.system import LogLevel
from saip.gateway.rest import Envelope, area_router
from saip.gateway.surface.management import MAX_INTEGER, LevelName, OutcomeName

Limit = Annotated[int, Query(ge=1, le=500, description="How many entries (1 to 500)")]
Before = Annotated[
    int, Query(ge=0, le=MAX_INTEGER, description="0 for the newest; otherwise the nextCursor of the previous page")
]
ToolName = Annotated[str | None, Query(max_length=128, description="Only calls of this exact tool name")]
NDJSON = "application/x-ndjson"
CSV = "text/csv"
# The columns of a CSV export: the fields of a management call as the log shows it.
COLUMNS = (
    "index",
    "cursor",
    "time",
    "client",
    "operator",
    "interface",
    "tool",
    "level",
    "outcome",
    "durationMs",
    "approval",
    "approvalSeconds",
    "answeredVia",
    "highRisk",
    "summary",
    "arguments",
    "result",
    "traceId",
)


def calls_filter(
    tool: ToolName = None,
    client: Annotated[str | None, Query(max_length=200, description="The client's name, or name and version")] = None,
    level: Annotated[LevelName | None, Query()] = None,
    outcome: Annotated[OutcomeName | None, Query()] = None,
    since: Annotated[datetime | None, Query(description="Calls that arrived at this time or later (RFC 3339)")] = None,
    until: Annotated[datetime | None, Query(description="Calls that arrived before this time (RFC 3339)")] = None,
    operator: Annotated[Literal["ai", "person"] | None, Query()] = None,
    interface: Annotated[Literal["mcp", "rest", "cli", "console"] | None, Query()] = None,
) -> CallsFilter:
    """The filter of the management log and its export, from the query."""
    return CallsFilter(
        tool=tool,
        client=client,
        level=level,
        outcome=outcome,
        since=since,
        until=until,
        operator=operator,
        interface=interface,
    )


async def exported(
    first: dict[str, Any] | None, rest: AsyncIterator[dict[str, Any]], *, as_csv: bool
) -> AsyncIterator[bytes]:
    """The export's lines: one JSON object a line, or a CSV header then one row a call."""
    if as_csv:
        yield _row(COLUMNS)
    if first is None:
        return
    yield _row([first.get(column) for column in COLUMNS]) if as_csv else _line(first)
    async for call in rest:
        yield _row([call.get(column) for column in COLUMNS]) if as_csv else _line(call)


def _line(call: dict[str, Any]) -> bytes:
    return (json.dumps(call, ensure_ascii=False) + "\n").encode()


def _row(cells: Sequence[object]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerow(["" if cell is None else cell for cell in cells])
    return out.getvalue().encode()


def router(area: MonitorArea) -> APIRouter:
    api = area_router(
        "/audit",
        {
            "/overview": ("Recent management outcomes, risk events, the audit chain", area.overview),
            "/verify": ("Walk the audit hash chain; ok false and data.broken name the first broken link", area.verify),
            "/system": (
                "Each service's processes and health, NATS JetStream and its consumers' lag, the vector store",
                area.system,
            ),
        },
    )

    @api.get("/logs", summary="The last log lines of a service or of all, oldest first (data: lines, count)")
    async def logs(
        service: Annotated[str | None, Query(max_length=32, pattern=r"^[a-z][a-z0-9-]*$")] = None,
        level: Annotated[LogLevel, Query()] = "INFO",
        text: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> Envelope:
        return Envelope.of(await area.logs_tail(LogsTailInput(service=service, level=level, text=text, limit=limit)))

    @api.get(
        "/management-log",
        summary="Management calls (the AI's and the person's), newest first (data: entries, count, nextCursor)",
    )
    async def management_log(
        wanted: Annotated[CallsFilter, Depends(calls_filter)], limit: Limit = 20, before: Before = 0
    ) -> Envelope:
        arguments = ManagementLogInput(limit=limit, before=before, **wanted.model_dump())
        return Envelope.of(await area.management_log(arguments))

    @api.get("/management-log/{cursor}", summary="One management call, opened: its masked summary, duration, trace")
    async def management_call(cursor: Annotated[int, Path(ge=1, le=MAX_INTEGER)]) -> Envelope:
        return Envelope.of(await area.management_call(cursor))

    @api.get(
        "/export",
        summary="The management calls a filter keeps, oldest first, as JSON lines or CSV (a download)",
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {NDJSON: {"schema": {"type": "object"}}, CSV: {"schema": {"type": "string"}}},
                "description": "One call a line",
            }
        },
    )
    async def export(
        wanted: Annotated[CallsFilter, Depends(calls_filter)],
        format: Annotated[Literal["jsonl", "csv"], Query(description="jsonl (JSON lines) or csv")] = "jsonl",
    ) -> StreamingResponse:
        calls = area.export(wanted)
        first = await anext(calls, None)  # an error before the first line is the envelope, under its status
        lines = exported(first, calls, as_csv=format == "csv")
        disposition = {"Content-Disposition": f'attachment; filename="saip-management-calls.{format}"'}
        return StreamingResponse(lines, media_type=CSV if format == "csv" else NDJSON, headers=disposition)

    @api.get("/tool-calls", summary="Published tool calls, newest first (data: entries, count, nextCursor)")
    async def tool_calls(limit: Limit = 20, before: Before = 0, tool: ToolName = None) -> Envelope:
        return Envelope.of(await area.tool_calls(ToolCallsInput(limit=limit, before=before, tool=tool)))

    @api.get("/risk-events", summary="Risk events, newest first (data: entries, count, nextCursor)")
    async def risk_events(
        limit: Limit = 20, before: Before = 0, type: Annotated[str | None, Query(max_length=64)] = None
    ) -> Envelope:
        return Envelope.of(await area.risk_events(RiskEventsInput(limit=limit, before=before, type=type)))

    @api.get("/hitl", summary="Approval decisions by side and decision, and the approval rate")
    async def hitl(recent: Annotated[int, Query(ge=1, le=100)] = 10) -> Envelope:
        return Envelope.of(await area.hitl(HitlInput(recent=recent)))

    @api.get(
        "/tail",
        summary="The last entries, then every new one as it is chained (NDJSON, one record a line)",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {"schema": {"type": "object"}}}, "description": "One record a line"}},
    )
    async def tail(backlog: Annotated[int, Query(ge=1, le=500)] = 20) -> StreamingResponse:
        async def lines() -> AsyncIterator[bytes]:
            async for record in area.tail(backlog):
                yield (json.dumps(record, ensure_ascii=False) + "\n").encode()

        return StreamingResponse(lines(), media_type=NDJSON)

    both = APIRouter()
    both.include_router(api)
    both.include_router(_traces(area))
    return both


def _traces(area: MonitorArea) -> APIRouter:
    api = area_router("/traces", {})

    @api.get("", summary="The recent traces, newest first (data: traces, count, kept)")
    async def traces(
        tool: ToolName = None,
        outcome: OutcomeName | None = None,
        min_duration_ms: Annotated[float, Query(alias="minDurationMs", ge=0, le=86_400_000)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 20,
    ) -> Envelope:
        arguments = TracesInput(tool=tool, outcome=outcome, minDurationMs=min_duration_ms, limit=limit)
        return Envelope.of(await area.traces(arguments))

    @api.get("/{trace_id}", summary="One trace: its spans as a tree, with their timings")
    async def trace(trace_id: Annotated[str, Path(pattern=TRACE_ID)]) -> Envelope:
        return Envelope.of(await area.trace_get(TraceGetInput(traceId=trace_id)))

    return api
