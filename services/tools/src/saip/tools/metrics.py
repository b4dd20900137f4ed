"""Every metric of the tools service. Labels are bounded: run kinds, results, guard reasons, tool states, and the
upstream servers, which a person or an AI registers one by one (`saip_mcp_add_custom`, behind approval, or
`tools.upstream-servers`): a handful per installation, never one per call or per caller."""

from __future__ import annotations

import itertools

from prometheus_client import REGISTRY, CollectorRegistry

from saip.common.metrics import Metrics, each
from saip.common.netguard import Reason
from saip.sandbox import job

GUARD_REASONS = (*(reason.value for reason in Reason), *job.GUARD_REASONS)
RUN_KINDS = ("test", "call")
STATES = ("draft", "published", "missing-requirements")
CHANGES = ("save-draft", "test", "publish", "delete", "exposure")
RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ToolsMetrics(Metrics):
    """The tools metrics on one registry, declared one entry each: a parallel table like every service's metrics
    object."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        super().__init__(registry)
        self.runs = self.counter(
            "saip_tools_sandbox_runs",
            "Tool code runs in the sandbox, by kind (test: Tool Studio; call: a served tool) and result",
            ["kind", "result"],
            known=itertools.product(RUN_KINDS, ("ok", "error")),
        )
        self.run_seconds = self.histogram(
            "saip_tools_sandbox_run_seconds",
            "Wall-clock time of one sandbox run, worker round trip included",
            ["kind"],
            buckets=RUN_BUCKETS,
            known=each(*RUN_KINDS),
        )
        self.guard_blocks = self.counter(
            "saip_tools_sandbox_guard_blocks",
            "Refusals by the sandbox (network guard, time, memory), by reason",
            ["reason"],
            known=each(*GUARD_REASONS),
        )
        self.poisoning_hits = self.counter(
            "saip_tools_poisoning_hits", "Tool descriptions that tripped the poisoning scan"
        )
        self.changes = self.counter(
            "saip_tools_changes",
            "Tool Studio changes written to the saip-tools bucket, by action",
            ["action"],
            known=each(*CHANGES),
        )
        self.tools = self.gauge(
            "saip_tools_tools", "Authored tools by state, as of the last listing", ["state"], known=each(*STATES)
        )
        self.workers = self.gauge("saip_tools_sandbox_workers", "Sandbox worker processes")
        self.upstream_calls = self.counter(
            "saip_tools_upstream_calls",
            "Calls of exposed upstream tools proxied to their server, by server id and outcome",
            ["server", "outcome"],
        )
        self.upstream_call_seconds = self.histogram(
            "saip_tools_upstream_call_seconds", "Wall-clock time of one proxied upstream call", buckets=RUN_BUCKETS
        )
        self.upstream_parked = self.gauge(
            "saip_tools_upstream_parked",
            "Proxied calls parked at an upstream's question until their 2026-07-28 caller answers (this replica)",
        )
        self.ledger_mismatches = self.counter(
            "saip_tools_ledger_mismatches", "Upstream tool definitions that changed from the accepted fingerprint"
        )
        self.cap_refusals = self.counter(
            "saip_tools_exposure_cap_refusals", "Exposure changes refused because a member is above expose.risk-cap"
        )
