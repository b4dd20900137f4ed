"""The monitor area: read-only tools over the audit trail and the management surface's own state, and the chain
check and live tail the person reads (REST, `saip audit`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import Field, field_validator

from saip.common.words import plural
from saip.gateway.areas.monitor import views
from saip.gateway.areas.monitor.client import AuditClient
from saip.gateway.areas.monitor.system import LogLevel, System
from saip.gateway.errors import ServiceNotFound
from saip.gateway.surface.declare import Declared, resource, tool
from saip.gateway.surface.management import MAX_INTEGER, Input, Level, LevelName, ManagementResult, OutcomeName
from saip.gateway.surface.registrar import described
from saip.v1 import audit_pb2

# The ToolCall source of an exposed upstream tool (the tools service's upstream proxy serves them under it).
EXPOSED = "exposed"


class Page(Protocol):
    """A page of the trail as the audit service answers it (management calls, tool calls, risk events)."""

    @property
    def entries(self) -> Sequence[Any]: ...

    @property
    def next_before_seq(self) -> int: ...


class PageInput(Input):
    limit: int = Field(default=20, ge=1, le=500, description="How many entries to return (1 to 500).")
    before: int = Field(
        default=0,
        ge=0,
        le=MAX_INTEGER,
        description="0 for the newest entries; otherwise the nextCursor of the previous page, for older ones.",
    )


class CallsFilter(Input):
    """Which management calls to keep: each field given must match."""

    tool: str | None = Field(default=None, max_length=128, description="Only calls of this exact tool name.")
    client: str | None = Field(
        default=None,
        max_length=200,
        description="Only calls of this client: its name, or name and version as listed ('person' for the person's).",
    )
    level: LevelName | None = Field(default=None, description="Only calls at this level.")
    outcome: OutcomeName | None = Field(default=None, description="Only calls that ended with this outcome.")
    since: datetime | None = Field(
        default=None, strict=False, description="Only calls that arrived at this time or later (RFC 3339)."
    )
    until: datetime | None = Field(default=None, strict=False, description="Only calls that arrived before this time.")
    operator: Literal["ai", "person"] | None = Field(default=None, description="Only the AI's calls, or the person's.")
    interface: Literal["mcp", "rest", "cli", "console"] | None = Field(
        default=None, description="Only calls that came through this interface."
    )

    @field_validator("since", "until")
    @classmethod
    def _in_utc(cls, moment: datetime | None) -> datetime | None:
        """A moment in UTC (one without an offset is UTC); one no timestamp holds there is refused, not failed on."""
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
        except OverflowError:
            raise ValueError("must be a time between 0001-01-01 and 9999-12-31 in UTC (RFC 3339)") from None

    def wanted(self) -> audit_pb2.CallFilter:
        wanted = audit_pb2.CallFilter(
            tool=self.tool or "",
            client=self.client or "",
            operator=self.operator or "",
            interface=self.interface or "",
        )
        if self.level:
            wanted.level = Level(self.level).proto
        if self.outcome:
            wanted.outcome = views.outcome_value(self.outcome)
        for moment, field in ((self.since, wanted.since), (self.until, wanted.until)):
            if moment is not None:
                field.FromDatetime(moment)
        return wanted


class ManagementLogInput(PageInput, CallsFilter):
    pass


class CallInput(Input):
    cursor: int = Field(ge=1, le=MAX_INTEGER, description="The call's cursor, as the management log lists it.")


class ToolCallsInput(PageInput):
    tool: str | None = Field(default=None, max_length=128, description="Only calls of this exact tool name.")


class RiskEventsInput(PageInput):
    type: str | None = Field(
        default=None,
        max_length=64,
        description="Only events of this type, e.g. MANAGEMENT, sandbox-guard-blocked, poisoning-hit.",
    )


class HitlInput(Input):
    recent: int = Field(default=10, ge=1, le=100, description="How many recent decided calls to include.")


class LogsTailInput(Input):
    service: str | None = Field(
        default=None,
        max_length=32,
        pattern=r"^[a-z][a-z0-9-]*$",
        description="Only this service's lines (gateway, audit, tools, knowledge, ...); every service when left out.",
    )
    level: LogLevel = Field(default="INFO", description="Only lines at this level or above.")
    text: str | None = Field(default=None, max_length=200, description="Only lines containing this text (any case).")
    limit: int = Field(default=50, ge=1, le=500, description="How many of the last matching lines (1 to 500).")


TRACE_ID = r"^[0-9a-fA-F]{32}$"


class TracesInput(Input):
    tool: str | None = Field(default=None, max_length=128, description="Only traces of calls of this exact tool name.")
    outcome: OutcomeName | None = Field(default=None, description="Only traces of calls that ended with this outcome.")
    minDurationMs: float = Field(
        default=0, ge=0, le=86_400_000, description="Only traces that took at least this many milliseconds."
    )
    limit: int = Field(default=20, ge=1, le=500, description="How many traces, newest first (1 to 500).")


class TraceGetInput(Input):
    traceId: str = Field(
        pattern=TRACE_ID, max_length=32, description="The trace's id: the 32 hex digits saip_monitor_traces shows."
    )


class MonitorArea(Declared):
    category = "monitor"

    def __init__(self, audit: AuditClient, status: Callable[[], dict[str, Any]], system: System) -> None:
        self._audit = audit
        self._status = status
        self._system = system

    @tool(Level.READ, "saip overview", idempotent=True)
    async def overview(self) -> ManagementResult:
        """The state of saip at a glance: whether the management surface is on (and the reason when it is not), the
        approval mode and wait, how the recent management calls ended, recent risk events by type, and the audit
        chain. Read it first when asked what happened or whether saip is healthy."""
        management = self._status()
        audit = views.overview(await self._audit.overview())
        outcomes = audit["managementOutcomes"]
        recent = ", ".join(f"{count} {name}" for name, count in outcomes.items() if count) or "none"
        message = (
            f"Management surface {described(management)}; approval mode {management['approval']}. "
            f"Last {audit['window']} management calls: {recent}. "
            f"Audit chain: {audit['chain']['length']} entries, {audit['pendingRecords']} records waiting to be chained."
        )
        return ManagementResult(True, message, data={"management": management, "audit": audit})

    @tool(Level.READ, "Management call log", idempotent=True)
    async def management_log(self, arguments: ManagementLogInput) -> ManagementResult:
        """Recent saip_* management calls, newest first, from the durable audit trail, the person's changes among them:
        the client (or the person) and the interface, tool, level, outcome, duration, the approval decision and who
        answered, masked summaries of the arguments and the result, and the call's trace. Filter by tool, client,
        level, outcome, operator, interface and a time range (since, until); for older calls pass `before` = the
        nextCursor of the previous page."""
        request = audit_pb2.ListManagementCallsRequest(
            limit=arguments.limit, before_seq=arguments.before, filter=arguments.wanted()
        )
        return _listed(await self._audit.management_calls(request), views.management_call, "management call")

    @tool(Level.READ, "Published tool call log", idempotent=True)
    async def tool_calls(self, arguments: ToolCallsInput) -> ManagementResult:
        """Recent calls of the tools /mcp serves (authored, knowledge and exposed upstream tools, not the saip_*
        management tools), newest first, from the durable audit trail: the client, tool, source, outcome, duration,
        the person's decision when the tool asks, and masked arguments and results. For older calls pass `before` =
        the nextCursor of the previous page."""
        request = audit_pb2.ListToolCallsRequest(
            limit=arguments.limit, before_seq=arguments.before, tool=arguments.tool or ""
        )
        return _listed(await self._audit.tool_calls(request), views.tool_call, "tool call")

    @tool(Level.READ, "Proxied calls", idempotent=True)
    async def proxied_calls(self, arguments: ToolCallsInput) -> ManagementResult:
        """Recent calls of the exposed upstream tools, newest first, from the durable audit trail: the client, the
        name on /mcp, the upstream server and tool it proxied to, outcome, duration, the person's decision, and
        masked arguments and results. Page with `before`."""
        request = audit_pb2.ListToolCallsRequest(
            limit=arguments.limit, before_seq=arguments.before, tool=arguments.tool or "", source=EXPOSED
        )
        return _listed(await self._audit.tool_calls(request), views.tool_call, "proxied call")

    @tool(Level.READ, "Risk events", idempotent=True)
    async def risk_events(self, arguments: RiskEventsInput) -> ManagementResult:
        """Recent risk events, newest first: a MANAGEMENT event for every management call that was not a successful
        read (warn for destructive calls and failures), and the signals services raise (sandbox-guard-blocked,
        poisoning-hit, hash-ledger-mismatch, ...). Page with `before`."""
        request = audit_pb2.ListRiskEventsRequest(
            limit=arguments.limit, before_seq=arguments.before, type=arguments.type or ""
        )
        return _listed(await self._audit.risk_events(request), views.risk_event, "risk event")

    @tool(Level.READ, "Approval decisions", idempotent=True)
    async def hitl(self, arguments: HitlInput) -> ManagementResult:
        """The person's approval decisions since the audit collector started, by side (server: the approval gate;
        chat: chat turns) and decision (approved, declined, timeout, elicit-failed, denied) — the same counters the
        Safety dashboard shows — the approval rate, how long the recent questions took to be answered, and the most
        recent calls that needed a decision."""
        data = views.hitl(await self._audit.hitl(audit_pb2.GetHitlSummaryRequest(recent=arguments.recent)))
        times = data["answerTimes"]
        answered = f" Answered in {times['p50Seconds']:g} s at the median." if times["answered"] else ""
        message = (
            f"{data['questions']} approval decisions since {data['since'] or 'the collector started'}; "
            f"approval rate {data['approvalRate']:.0%}.{answered}"
        )
        return ManagementResult(True, message, data=data)

    @tool(Level.READ, "Recent traces", idempotent=True)
    async def traces(self, arguments: TracesInput) -> ManagementResult:
        """The recent traces, newest first: one per MCP request (and per gRPC call that came from outside one), each
        with its tool, outcome, duration, span count and the services it crossed. Filter by `tool`, `outcome` and
        `minDurationMs` to find the slow or failed calls, then read one with saip_monitor_trace_get. The audit
        service keeps the recent ones only (audit.traces-max, audit.traces-max-age-minutes)."""
        request = audit_pb2.ListTracesRequest(
            limit=arguments.limit,
            tool=arguments.tool or "",
            outcome=arguments.outcome or "",
            min_duration_ms=arguments.minDurationMs,
        )
        reply = await self._audit.traces(request)
        found = [views.trace_summary(trace) for trace in reply.traces]
        message = (
            f"{plural(len(found), 'trace')}, newest first, of {reply.kept} kept "
            f"(at most {reply.capacity}, for {reply.max_age_minutes:g} min after their last span)."
        )
        return ManagementResult(True, message, data={"traces": found, "count": len(found), "kept": reply.kept})

    @tool(Level.READ, "One trace", idempotent=True)
    async def trace_get(self, arguments: TraceGetInput) -> ManagementResult:
        """One trace as a tree of spans with their timings: the gateway's MCP request, its gate steps (plan,
        question, run), the gRPC calls and the owning service's side (sandbox run, Qdrant query, upstream call), the
        audit record's publish and the audit collector's chaining. Each span has its service, its start after the
        trace's (startOffsetMs), its duration, whether it failed and its attributes."""
        data = views.trace(await self._audit.trace(arguments.traceId.lower()))
        message = (
            f"Trace {data['traceId']}: {data['name']}, {data['durationMs']:.1f} ms, "
            f"{plural(data['spanCount'], 'span')} across {', '.join(data['services'])}"
            f"{'; some failed' if data['error'] else ''}{'' if data['complete'] else '; its root span is not in yet'}."
        )
        return ManagementResult(True, message, data=data)

    @tool(Level.READ, "System status", idempotent=True)
    async def system(self) -> ManagementResult:
        """Each service's processes (version, uptime, CPU seconds, memory, open files and connections, threads, last
        heartbeat) and health; NATS JetStream's usage, its streams and its durable consumers with their lag (pending
        and unacknowledged messages); and the vector store as the knowledge service reports it."""
        data = await self._system.snapshot()
        away = [entry["service"] for entry in data["services"] if entry["health"] != "ok"]
        lag = sum(consumer["pending"] + consumer["ackPending"] for consumer in data["nats"]["consumers"])
        processes = sum(len(entry["replicas"]) for entry in data["services"])
        health = f"not healthy: {', '.join(away)}" if away else "every service healthy"
        message = (
            f"{plural(len(data['services']), 'service')} ({plural(processes, 'process heartbeat')}), {health}; NATS "
            f"{data['nats']['health']}, {plural(len(data['nats']['streams']), 'stream')}, {lag} messages waiting in "
            f"durable consumers; vector store {data['vectorStore']['status']}."
        )
        return ManagementResult(True, message, data=data)

    @tool(Level.READ, "Service log lines", idempotent=True)
    async def logs_tail(self, arguments: LogsTailInput) -> ManagementResult:
        """The last JSON log lines of one service or of all, oldest first, at a level or above and containing a
        text, secrets masked: what the services wrote to their logs (each keeps its last 2000 lines in NATS). Read
        it when a tool call failed with a pointer to a service's log."""
        lines = await self._system.logs(arguments.service, arguments.level, arguments.text, arguments.limit)
        whose = f"of {arguments.service}" if arguments.service else "of every service"
        message = f"{plural(len(lines), 'log line')} {whose} at {arguments.level} or above, oldest first."
        return ManagementResult(True, message, data={"lines": lines, "count": len(lines)})

    @resource("saip://status/management", "Management surface status", mime_type="application/json")
    async def status_json(self) -> str:
        """Whether the management tools are offered (or why not), the approval mode and wait, and the registered
        tools, resources and prompts; JSON, fresh on every read."""
        return json.dumps(self._status(), indent=2, sort_keys=True)

    # The person's side only: one call opened, the export, the chain check and the live tail (REST, `saip audit`).

    async def management_call(self, arguments: CallInput) -> ManagementResult:
        """One management call of the trail, opened: everything a listing shows of it, and its trace id."""
        entry = await self._audit.entry(arguments.cursor)
        if not entry.record.HasField("management"):
            raise ServiceNotFound(
                f"The entry at cursor {arguments.cursor} is not a management call; the management log lists them."
            )
        data = views.management_call(entry)
        said = (
            f"{data['tool']} by {data['client']} ({data['interface']}): {data['outcome']} in {data['durationMs']} ms."
        )
        return ManagementResult(True, said, data=data)

    async def export(self, arguments: CallsFilter) -> AsyncIterator[dict[str, Any]]:
        """The management calls the filter keeps, oldest first, as the management log shows each."""
        async for entry in self._audit.export(arguments.wanted()):
            yield views.management_call(entry)

    async def verify(self) -> ManagementResult:
        """Walk the hash chain; not ok, naming the first broken link, when it does not hold."""
        data = views.verify(await self._audit.verify())
        if data["ok"]:
            message = f"chain intact: {data['checked']} entries checked (#{data['firstIndex']}..#{data['lastIndex']})"
        else:
            broken = data["broken"]
            message = f"chain broken at entry #{broken['index']} (cursor {broken['cursor']}): {broken['reason']}"
        return ManagementResult(data["ok"], message, data=data)

    async def tail(self, backlog: int) -> AsyncIterator[dict[str, Any]]:
        """The last `backlog` chained records, then each new one as it is chained, each tagged with its kind."""
        async for entry in self._audit.tail(backlog):
            yield views.record(entry)


def _listed(reply: Page, view: Callable[[Any], dict[str, Any]], noun: str) -> ManagementResult:
    """One page of the trail, newest first, and how many it holds."""
    entries = [view(entry) for entry in reply.entries]
    data = views.page(entries, reply.next_before_seq)
    return ManagementResult(True, f"{plural(len(entries), noun)}, newest first.", data=data)
