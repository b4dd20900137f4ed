"""Every metric of the tools service. Labels are bounded: run kinds, results, guard reasons, tool states."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from saip.common.netguard import Reason
from saip.sandbox import job

GUARD_REASONS = (*(reason.value for reason in Reason), *job.GUARD_REASONS)
RUN_KINDS = ("test", "call")
STATES = ("draft", "published", "missing-requirements")


class ToolsMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.runs = Counter(
            "saip_tools_sandbox_runs",
            "Tool code runs in the sandbox, by kind (test: Tool Studio; call: a served tool) and result",
            ["kind", "result"],
            registry=registry,
        )
        self.run_seconds = Histogram(
            "saip_tools_sandbox_run_seconds",
            "Wall-clock time of one sandbox run, worker round trip included",
            ["kind"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        self.guard_blocks = Counter(
            "saip_tools_sandbox_guard_blocks",
            "Refusals by the sandbox (network guard, time, memory), by reason",
            ["reason"],
            registry=registry,
        )
        self.poisoning_hits = Counter(
            "saip_tools_poisoning_hits", "Tool descriptions that tripped the poisoning scan", registry=registry
        )
        self.changes = Counter(
            "saip_tools_changes",
            "Tool Studio changes written to the saip-tools bucket, by action",
            ["action"],
            registry=registry,
        )
        self.tools = Gauge(
            "saip_tools_tools", "Authored tools by state, as of the last listing", ["state"], registry=registry
        )
        self.workers = Gauge("saip_tools_sandbox_workers", "Sandbox worker processes", registry=registry)
        for kind in RUN_KINDS:
            self.run_seconds.labels(kind)
            for result in ("ok", "error"):
                self.runs.labels(kind, result)
        for reason in GUARD_REASONS:
            self.guard_blocks.labels(reason)
        for action in ("save-draft", "test", "publish", "delete", "exposure"):
            self.changes.labels(action)
        for state in STATES:
            self.tools.labels(state)
