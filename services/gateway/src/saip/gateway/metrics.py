"""Every metric the gateway exports, on the registry it is given (labels are bounded: levels, outcomes, decisions,
routes, MCP methods). The model every service shares: `saip.common.metrics.Metrics`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from saip.common.metrics import Metrics, each

LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180)
AUDIT_RESULTS = ("acked", "spooled", "flushed")
SURFACES = ("mcp", "api")
SERVED_KINDS = ("tools", "resources", "resource_templates", "prompts", "skills")
TOKEN_CHANGES = ("set", "removed")
LIMITS = ("calls", "questions")
OAUTH_ENDPOINTS = ("authorize", "token", "register", "revoke")
OAUTH_OUTCOMES = ("ok", "redirected", "refused", "failed", "throttled")


class GatewayMetrics(Metrics):
    """The gateway's metrics on one registry: the process's own when it serves, one of its own for a gateway in a test
    beside others (two on one registry would collide). Every bounded label is exported from the start (`known`)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry if registry is not None else CollectorRegistry())
        # A declared parallel table: one line per metric, all of one shape.
        self.management_call_seconds = self.histogram(
            "saip_gateway_management_call_seconds",
            "Time from a management call's arrival to its answer, approval wait included",
            ["level", "outcome"],
            buckets=LATENCY,
        )
        self.tool_call_seconds = self.histogram(
            "saip_gateway_tool_call_seconds",
            "Time from a published tool call's arrival to its answer, approval wait included, by source and outcome",
            ["source", "outcome"],
            buckets=LATENCY,
        )
        self.approval_wait = self.histogram(
            "saip_gateway_approval_wait_seconds",
            "How long an approval question waited for the person, by decision",
            ["decision"],
            buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600),
        )
        self.approvals_pending = self.gauge(
            "saip_gateway_approvals_pending", "Approval questions waiting for the person right now (2025-11-25 clients)"
        )
        self.limited = self.counter(
            "saip_gateway_limited",
            "Calls refused by a per-client limit: management calls over management.rate-limit (calls), questions "
            "over management.question-limit (questions)",
            ["limit"],
            known=each(*LIMITS),
        )
        self.audit_records = self.counter(
            "saip_gateway_audit_records",
            "Audit records by what happened to them: acked by JetStream, spooled to disk, flushed from the spool",
            ["result"],
            known=each(*AUDIT_RESULTS),
        )
        self.audit_spooled = self.gauge(
            "saip_gateway_audit_spooled_records", "Audit records waiting on disk for NATS to come back"
        )
        self.auth_rejected = self.counter(
            "saip_gateway_auth_rejections",
            "Requests refused for a wrong or missing bearer token",
            ["surface"],
            known=each(*SURFACES),
        )
        self.served = self.gauge(
            "saip_gateway_served", "What /mcp serves right now", ["kind"], known=each(*SERVED_KINDS)
        )
        self.mcp_sessions = self.gauge(
            "saip_gateway_mcp_sessions", "Live 2025-11-25 sessions that receive list_changed"
        )
        self.mcp_requests = self.counter(
            "saip_gateway_mcp_requests", "MCP requests handled, by method and protocol era", ["method", "era"]
        )
        self.mcp_request_seconds = self.histogram(
            "saip_gateway_mcp_request_seconds", "Time to answer one MCP request", ["method"], buckets=LATENCY
        )
        self.http_requests = self.counter(
            "saip_gateway_http_requests",
            "REST API and health requests, by route and status",
            ["route", "method", "status"],
        )
        self.http_request_seconds = self.histogram(
            "saip_gateway_http_request_seconds",
            "Time to answer one REST API request",
            ["route", "method"],
            buckets=LATENCY,
        )
        self.token_changes = self.counter(
            "saip_gateway_token_changes",
            "MCP token changes this replica applied",
            ["change"],
            known=each(*TOKEN_CHANGES),
        )
        self.oauth_requests = self.counter(
            "saip_gateway_oauth_requests",
            "Requests to the OAuth endpoints, by endpoint and outcome (throttled: refused for too many failed tokens)",
            ["endpoint", "outcome"],
            known=[(endpoint, outcome) for endpoint in OAUTH_ENDPOINTS for outcome in OAUTH_OUTCOMES],
        )
        self.surface_on = self.gauge(
            "saip_gateway_management_surface_on", "1 while the management tools are registered"
        )
