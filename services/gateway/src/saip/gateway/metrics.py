"""Every metric the gateway exports, on the registry it is given (labels are bounded: levels, outcomes, decisions,
routes, MCP methods)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180)
AUDIT_RESULTS = ("acked", "spooled", "flushed")
SURFACES = ("mcp", "api")
SERVED_KINDS = ("tools", "resources", "resource_templates", "prompts")
TOKEN_CHANGES = ("set", "removed")
LIMITS = ("calls", "questions")


class GatewayMetrics:
    """The gateway's metrics on one registry: the process's own when it serves, one of its own for a gateway in a test
    beside others (two on one registry would collide)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        registry = self.registry
        # A declared parallel table: one block per metric, all of one shape.
        self.management_call_seconds = Histogram(
            "saip_gateway_management_call_seconds",
            "Time from a management call's arrival to its answer, approval wait included",
            ["level", "outcome"],
            buckets=LATENCY,
            registry=registry,
        )
        self.tool_call_seconds = Histogram(
            "saip_gateway_tool_call_seconds",
            "Time from a published tool call's arrival to its answer, approval wait included, by source and outcome",
            ["source", "outcome"],
            buckets=LATENCY,
            registry=registry,
        )
        self.approval_wait = Histogram(
            "saip_gateway_approval_wait_seconds",
            "How long an approval question waited for the person, by decision",
            ["decision"],
            buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600),
            registry=registry,
        )
        self.approvals_pending = Gauge(
            "saip_gateway_approvals_pending",
            "Approval questions waiting for the person right now (2025-11-25 clients)",
            registry=registry,
        )
        self.limited = Counter(
            "saip_gateway_limited",
            "Calls refused by a per-client limit: management calls over management.rate-limit (calls), questions "
            "over management.question-limit (questions)",
            ["limit"],
            registry=registry,
        )
        self.audit_records = Counter(
            "saip_gateway_audit_records",
            "Audit records by what happened to them: acked by JetStream, spooled to disk, flushed from the spool",
            ["result"],
            registry=registry,
        )
        self.audit_spooled = Gauge(
            "saip_gateway_audit_spooled_records",
            "Audit records waiting on disk for NATS to come back",
            registry=registry,
        )
        self.auth_rejected = Counter(
            "saip_gateway_auth_rejections",
            "Requests refused for a wrong or missing bearer token",
            ["surface"],
            registry=registry,
        )
        self.served = Gauge("saip_gateway_served", "What /mcp serves right now", ["kind"], registry=registry)
        self.mcp_sessions = Gauge(
            "saip_gateway_mcp_sessions", "Live 2025-11-25 sessions that receive list_changed", registry=registry
        )
        self.mcp_requests = Counter(
            "saip_gateway_mcp_requests",
            "MCP requests handled, by method and protocol era",
            ["method", "era"],
            registry=registry,
        )
        self.mcp_request_seconds = Histogram(
            "saip_gateway_mcp_request_seconds",
            "Time to answer one MCP request",
            ["method"],
            buckets=LATENCY,
            registry=registry,
        )
        self.http_requests = Counter(
            "saip_gateway_http_requests",
            "REST API and health requests, by route and status",
            ["route", "method", "status"],
            registry=registry,
        )
        self.http_request_seconds = Histogram(
            "saip_gateway_http_request_seconds",
            "Time to answer one REST API request",
            ["route", "method"],
            buckets=LATENCY,
            registry=registry,
        )
        self.token_changes = Counter(
            "saip_gateway_token_changes", "MCP token changes this replica applied", ["change"], registry=registry
        )
        self.surface_on = Gauge(
            "saip_gateway_management_surface_on", "1 while the management tools are registered", registry=registry
        )
        # Every bounded label is exported from the start, so a dashboard's query has a series before the first event.
        for result in AUDIT_RESULTS:
            self.audit_records.labels(result)
        for surface in SURFACES:
            self.auth_rejected.labels(surface)
        for kind in SERVED_KINDS:
            self.served.labels(kind)
        for change in TOKEN_CHANGES:
            self.token_changes.labels(change)
        for limit in LIMITS:
            self.limited.labels(limit)
