"""The person's side of the monitor area under /api/v1/audit: the monitor tools' methods, the chain check, and the
live tail (the one route that streams: NDJSON, one chained record a line); and the recent traces under
/api/v1/traces."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import StreamingResponse

from saip.gateway.areas.monitor.contribution import (
    TRACE_ID,
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
from saip.gateway.surface.management import MAX_INTEGER, OutcomeName

Limit = Annotated[int, Query(ge=1, le=500, description="How many entries (1 to 500)")]
Before = Annotated[
    int, Query(ge=0, le=MAX_INTEGER, description="0 for the newest; otherwise the nextCursor of the previous page")
]
ToolName = Annotated[str | None, Query(max_length=128, description="Only calls of this exact tool name")]
NDJSON = "application/x-ndjson"


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

    @api.get("/management-log", summary="Management calls, newest first (data: entries, count, nextCursor)")
    async def management_log(
        limit: Limit = 20, before: Before = 0, tool: ToolName = None, outcome: OutcomeName | None = None
    ) -> Envelope:
        arguments = ManagementLogInput(limit=limit, before=before, tool=tool, outcome=outcome)
        return Envelope.of(await area.management_log(arguments))

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
