"""The person's side of the monitor area under /api/v1/audit: the monitor tools' methods, one management call
opened, the chain check, the live tail and the export of a filtered range (the routes that stream: NDJSON, one
record a line, or CSV); and the recent traces under /api/v1/traces."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import StreamingResponse

from saip.gateway.areas.monitor.contribution import TRACE_ID, CallsFilter, MonitorArea, TraceGetInput
from saip.gateway.rest import Call, Envelope, area_router
from saip.gateway.rest_arguments import Arguments

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
# The filter of the export (the management log's too), read from the query.
Filter = Annotated[CallsFilter, Depends(Arguments(CallsFilter))]


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
            "GET /overview": Call(area.overview, "Recent management outcomes, risk events, the audit chain"),
            "GET /verify": Call(
                area.verify,
                "Walk the audit hash chain; ok false and data.broken name the first broken link",
            ),
            "GET /system": Call(
                area.system,
                "Each service's processes and health, NATS JetStream and its consumers' lag, the vector store",
            ),
            "GET /logs": Call(
                area.logs_tail,
                "The last log lines of a service or of all, oldest first (data: lines, count)",
            ),
            "GET /management-log": Call(
                area.management_log,
                "Management calls (the AI's and the person's), newest first (data: entries, count, nextCursor)",
            ),
            "GET /management-log/{cursor}": Call(
                area.management_call, "One management call, opened: its masked summary, duration, trace"
            ),
            "GET /tool-calls": Call(
                area.tool_calls,
                "Published tool calls, newest first (data: entries, count, nextCursor)",
            ),
            "GET /risk-events": Call(area.risk_events, "Risk events, newest first (data: entries, count, nextCursor)"),
            "GET /hitl": Call(area.hitl, "Approval decisions by side and decision, and the approval rate"),
        },
    )

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
        wanted: Filter,
        format: Annotated[Literal["jsonl", "csv"], Query(description="jsonl (JSON lines) or csv")] = "jsonl",
    ) -> StreamingResponse:
        calls = area.export(wanted)
        first = await anext(calls, None)  # an error before the first line is the envelope, under its status
        lines = exported(first, calls, as_csv=format == "csv")
        disposition = {"Content-Disposition": f'attachment; filename="saip-management-calls.{format}"'}
        return StreamingResponse(lines, media_type=CSV if format == "csv" else NDJSON, headers=disposition)

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
    api = area_router(
        "/traces", {"GET": Call(area.traces, "The recent traces, newest first (data: traces, count, kept)")}
    )

    @api.get("/{trace_id}", summary="One trace: its spans as a tree, with their timings")
    async def trace(trace_id: Annotated[str, Path(pattern=TRACE_ID)]) -> Envelope:
        return Envelope.of(await area.trace_get(TraceGetInput(traceId=trace_id)))

    return api
