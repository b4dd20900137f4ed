"""The monitor area: read-only tools over the audit trail and the management surface's own state."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from saip.gateway import views
from saip.gateway.clients import AuditClient
from saip.gateway.management import (
    Input,
    Level,
    ManagementPrompt,
    ManagementResource,
    ManagementResourceTemplate,
    ManagementResult,
    ManagementTool,
    NoInput,
)
from saip.v1 import audit_pb2

OutcomeName = Literal["OK", "ERROR", "REFUSED", "DECLINED", "DENIED", "TIMEOUT"]


class PageInput(Input):
    limit: int = Field(default=20, ge=1, le=500, description="How many entries to return (1 to 500).")
    before: int = Field(
        default=0,
        ge=0,
        description="0 for the newest entries; otherwise the nextCursor of the previous page, for older ones.",
    )


class ManagementLogInput(PageInput):
    tool: str | None = Field(default=None, max_length=128, description="Only calls of this exact tool name.")
    outcome: OutcomeName | None = Field(default=None, description="Only calls that ended with this outcome.")


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


class MonitorContribution:
    category = "monitor"

    def __init__(self, audit: AuditClient, status: Callable[[], dict[str, Any]]) -> None:
        self._audit = audit
        self._status = status

    def tools(self) -> Sequence[ManagementTool]:
        return [
            ManagementTool(
                name="saip_monitor_overview",
                category=self.category,
                title="saip overview",
                description=(
                    "The state of saip at a glance: whether the management surface is on (and the reason when it is "
                    "not), the approval mode and wait, how the recent management calls ended, recent risk events by "
                    "type, and the audit chain. Read it first when asked what happened or whether saip is healthy."
                ),
                input_model=NoInput,
                level=Level.READ,
                handler=lambda _, caller: self.overview(),
                idempotent=True,
            ),
            ManagementTool(
                name="saip_monitor_management_log",
                category=self.category,
                title="Management call log",
                description=(
                    "Recent saip_* management calls, newest first, from the durable audit trail: the client, tool, "
                    "level, outcome, duration, the person's approval decision, and masked summaries of the arguments "
                    "and the result. For older calls pass `before` = the nextCursor of the previous page."
                ),
                input_model=ManagementLogInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.management_log(arguments),
                idempotent=True,
            ),
            ManagementTool(
                name="saip_monitor_tool_calls",
                category=self.category,
                title="Published tool call log",
                description=(
                    "Recent calls of the published tools (authored and knowledge tools, not the saip_* management "
                    "tools), newest first, from the durable audit trail: the client, tool, source, outcome, duration, "
                    "the person's decision when the tool asks, and masked arguments and results. For older calls pass "
                    "`before` = the nextCursor of the previous page."
                ),
                input_model=ToolCallsInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.tool_calls(arguments),
                idempotent=True,
            ),
            ManagementTool(
                name="saip_monitor_risk_events",
                category=self.category,
                title="Risk events",
                description=(
                    "Recent risk events, newest first: a MANAGEMENT event for every management call that was not a "
                    "successful read (warn for destructive calls and failures), and the signals services raise "
                    "(sandbox-guard-blocked, poisoning-hit, hash-ledger-mismatch, ...). Page with `before`."
                ),
                input_model=RiskEventsInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.risk_events(arguments),
                idempotent=True,
            ),
            ManagementTool(
                name="saip_monitor_hitl",
                category=self.category,
                title="Approval decisions",
                description=(
                    "The person's approval decisions since the audit collector started, by side (server: the "
                    "approval gate; chat: chat turns) and decision (approved, declined, timeout, elicit-failed, "
                    "denied) — the same counters the Safety dashboard shows — the approval rate, and the most "
                    "recent calls that needed a decision."
                ),
                input_model=HitlInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.hitl(arguments),
                idempotent=True,
            ),
        ]

    def resources(self) -> Sequence[ManagementResource]:
        return [
            ManagementResource(
                uri="saip://status/management",
                name="Management surface status",
                description=(
                    "Whether the management tools are offered (or why not), the approval mode and wait, and the "
                    "registered tools, resources and prompts; JSON, fresh on every read."
                ),
                read=self._status_json,
            )
        ]

    def resource_templates(self) -> Sequence[ManagementResourceTemplate]:
        return []

    def prompts(self) -> Sequence[ManagementPrompt]:
        return []

    async def _status_json(self) -> str:
        return json.dumps(self._status(), indent=2, sort_keys=True)

    async def overview(self) -> ManagementResult:
        management = self._status()
        audit = views.overview(await self._audit.overview())
        outcomes = audit["managementOutcomes"]
        recent = ", ".join(f"{count} {name}" for name, count in outcomes.items() if count) or "none"
        surface = (
            f"on with {len(management['tools'])} management tools"
            if management["surface"]
            else f"off ({management['reason']})"
        )
        message = (
            f"Management surface {surface}; approval mode {management['approval']}. "
            f"Last {audit['window']} management calls: {recent}. "
            f"Audit chain: {audit['chain']['length']} entries, {audit['pendingRecords']} records waiting to be chained."
        )
        return ManagementResult(True, message, data={"management": management, "audit": audit})

    async def management_log(self, arguments: ManagementLogInput) -> ManagementResult:
        request = audit_pb2.ListManagementCallsRequest(
            limit=arguments.limit, before_seq=arguments.before, tool=arguments.tool or ""
        )
        if arguments.outcome:
            request.outcome = views.outcome_value(arguments.outcome)
        reply = await self._audit.management_calls(request)
        return _listed(
            [views.management_call(entry) for entry in reply.entries], reply.next_before_seq, "management call"
        )

    async def tool_calls(self, arguments: ToolCallsInput) -> ManagementResult:
        reply = await self._audit.tool_calls(
            audit_pb2.ListToolCallsRequest(
                limit=arguments.limit, before_seq=arguments.before, tool=arguments.tool or ""
            )
        )
        return _listed([views.tool_call(entry) for entry in reply.entries], reply.next_before_seq, "tool call")

    async def risk_events(self, arguments: RiskEventsInput) -> ManagementResult:
        reply = await self._audit.risk_events(
            audit_pb2.ListRiskEventsRequest(
                limit=arguments.limit, before_seq=arguments.before, type=arguments.type or ""
            )
        )
        return _listed([views.risk_event(entry) for entry in reply.entries], reply.next_before_seq, "risk event")

    async def hitl(self, arguments: HitlInput) -> ManagementResult:
        data = views.hitl(await self._audit.hitl(audit_pb2.GetHitlSummaryRequest(recent=arguments.recent)))
        message = (
            f"{data['questions']} approval decisions since {data['since'] or 'the collector started'}; "
            f"approval rate {data['approvalRate']:.0%}."
        )
        return ManagementResult(True, message, data=data)


def _listed(entries: list[dict[str, Any]], next_cursor: int, noun: str) -> ManagementResult:
    """One page of the trail, newest first, and how many it holds."""
    counted = f"{len(entries)} {noun}{'' if len(entries) == 1 else 's'}, newest first."
    return ManagementResult(True, counted, data=views.page(entries, next_cursor))
