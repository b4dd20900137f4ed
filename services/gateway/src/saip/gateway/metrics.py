"""Every metric the gateway exports (labels are bounded: levels, outcomes, decisions, routes, MCP methods)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180)

MANAGEMENT_CALL_SECONDS = Histogram(
    "saip_gateway_management_call_seconds",
    "Time from a management call's arrival to its answer, approval wait included",
    ["level", "outcome"],
    buckets=_LATENCY,
)
TOOL_CALL_SECONDS = Histogram(
    "saip_gateway_tool_call_seconds",
    "Time from a published tool call's arrival to its answer, approval wait included, by source and outcome",
    ["source", "outcome"],
    buckets=_LATENCY,
)
APPROVAL_WAIT = Histogram(
    "saip_gateway_approval_wait_seconds",
    "How long an approval question waited for the person, by decision",
    ["decision"],
    buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600),
)
APPROVALS_PENDING = Gauge(
    "saip_gateway_approvals_pending", "Approval questions waiting for the person right now (2025-11-25 clients)"
)
AUDIT_RECORDS = Counter(
    "saip_gateway_audit_records",
    "Audit records by what happened to them: acked by JetStream, spooled to disk, flushed from the spool",
    ["result"],
)
AUDIT_SPOOLED = Gauge("saip_gateway_audit_spooled_records", "Audit records waiting on disk for NATS to come back")
AUTH_REJECTED = Counter(
    "saip_gateway_auth_rejections", "Requests refused for a wrong or missing bearer token", ["surface"]
)
SERVED = Gauge("saip_gateway_served", "What /mcp serves right now", ["kind"])
MCP_SESSIONS = Gauge("saip_gateway_mcp_sessions", "Live 2025-11-25 sessions that receive list_changed")
MCP_REQUESTS = Counter(
    "saip_gateway_mcp_requests", "MCP requests handled, by method and protocol era", ["method", "era"]
)
MCP_REQUEST_SECONDS = Histogram(
    "saip_gateway_mcp_request_seconds", "Time to answer one MCP request", ["method"], buckets=_LATENCY
)
HTTP_REQUESTS = Counter(
    "saip_gateway_http_requests", "REST API and health requests, by route and status", ["route", "method", "status"]
)
HTTP_REQUEST_SECONDS = Histogram(
    "saip_gateway_http_request_seconds", "Time to answer one REST API request", ["route", "method"], buckets=_LATENCY
)
TOKEN_CHANGES = Counter("saip_gateway_token_changes", "MCP token changes this replica applied", ["change"])
SURFACE_ON = Gauge("saip_gateway_management_surface_on", "1 while the management tools are registered")

for _outcome in ("acked", "spooled", "flushed"):
    AUDIT_RECORDS.labels(_outcome)
for _surface in ("mcp", "api"):
    AUTH_REJECTED.labels(_surface)
for _kind in ("tools", "resources", "resource_templates", "prompts"):
    SERVED.labels(_kind)
for _change in ("set", "removed"):
    TOKEN_CHANGES.labels(_change)
