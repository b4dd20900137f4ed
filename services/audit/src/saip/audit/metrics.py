"""Every metric of the audit service: what the Safety dashboard and saip_monitor_* read.

Labels come from records, so each label is bounded: outcomes, sides, decisions and severities are fixed
vocabularies, and tool names, risk types and guard reasons fold into "other" past a fixed number of values.
Known label combinations are created up front so they export 0 before the first record.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from saip.audit.records import (
    HITL_DECISION_LABELS,
    HITL_SIDE_LABELS,
    KINDS,
    KNOWN_RISK_TYPES,
    OUTCOME_LABELS,
    REJECT_REASONS,
    SEVERITY_LABELS,
    Signals,
)

OTHER = "other"
MAX_TOOLS = 200
MAX_RISK_TYPES = 50
MAX_GUARD_REASONS = 50
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class BoundedLabel:
    """Lets the first `limit` distinct values through and folds the rest into "other"."""

    def __init__(self, limit: int, known: tuple[str, ...] = ()) -> None:
        self._limit = limit
        self._seen: set[str] = set(known)

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        if len(self._seen) >= self._limit:
            return OTHER
        self._seen.add(value)
        return value


class AuditMetrics:
    """The audit metrics on one registry (the process-wide one in the service; a fresh one per test)."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        self.management_calls = Counter(
            "saip_audit_management_calls",
            "Management tool calls chained, by tool and outcome",
            ["tool", "outcome"],
            registry=registry,
        )
        self.hitl_decisions = Counter(
            "saip_audit_hitl_decisions",
            "Approval decisions of chained calls, by the gate that asked and the decision",
            ["side", "decision"],
            registry=registry,
        )
        self.risk_events = Counter(
            "saip_audit_risk_events",
            "Risk events chained (MANAGEMENT events derived from calls included), by type and severity",
            ["type", "severity"],
            registry=registry,
        )
        self.sandbox_guard_blocks = Counter(
            "saip_audit_sandbox_guard_blocks",
            "Sandbox guard blocks reported, by the guard's reason",
            ["reason"],
            registry=registry,
        )
        self.poisoning_hits = Counter("saip_audit_poisoning_hits", "Tool poisoning hits reported", registry=registry)
        self.tamper_rejects = Counter(
            "saip_audit_tamper_rejects",
            "Definitions withheld because their fingerprint changed (hash-ledger-mismatch)",
            registry=registry,
        )
        self.records = Counter("saip_audit_records", "Audit records chained, by kind", ["kind"], registry=registry)
        self.rejected_records = Counter(
            "saip_audit_rejected_records",
            "Messages on a record subject that could not be chained, by reason",
            ["reason"],
            registry=registry,
        )
        self.duplicate_records = Counter(
            "saip_audit_duplicate_records",
            "Records delivered again after they were chained (redeliveries), not chained twice",
            registry=registry,
        )
        self.chain_conflicts = Counter(
            "saip_audit_chain_conflicts",
            "Appends refused because another collector had extended the chain first",
            registry=registry,
        )
        self.chain_length = Gauge("saip_audit_chain_length", "Index of the chain's last entry", registry=registry)
        self.pipeline_lag = Histogram(
            "saip_audit_pipeline_lag_seconds",
            "Time from a record's own timestamp to its entry in the chain",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.pending_records = Gauge(
            "saip_audit_pending_records",
            "Records published but not yet chained (the collector consumer's pending and unacknowledged)",
            registry=registry,
        )
        self._tools = BoundedLabel(MAX_TOOLS)
        self._tools_created: set[str] = set()
        self._risk_types = BoundedLabel(MAX_RISK_TYPES, KNOWN_RISK_TYPES)
        self._guard_reasons = BoundedLabel(MAX_GUARD_REASONS)
        self._precreate()

    def _precreate(self) -> None:
        for side in HITL_SIDE_LABELS.values():
            for decision in HITL_DECISION_LABELS.values():
                self.hitl_decisions.labels(side, decision)
        for risk_type in KNOWN_RISK_TYPES:
            for severity in SEVERITY_LABELS.values():
                self.risk_events.labels(risk_type, severity)
        for kind in KINDS:
            self.records.labels(kind)
        for reason in REJECT_REASONS:
            self.rejected_records.labels(reason)

    def chained(self, signals: Signals, lag_seconds: float | None) -> None:
        """Count one chained record; `lag_seconds` is its record time to chain time, when the record has a time."""
        self.records.labels(signals.kind).inc()
        if signals.management is not None:
            tool, outcome = signals.management
            self.management_calls.labels(self._tool_label(tool), outcome).inc()
        if signals.hitl is not None:
            self.hitl_decisions.labels(*signals.hitl).inc()
        if signals.risk_event is not None:
            risk_type, severity = signals.risk_event
            self.risk_events.labels(self._risk_types(risk_type), severity).inc()
        if signals.guard_block_reason is not None:
            self.sandbox_guard_blocks.labels(self._guard_reasons(signals.guard_block_reason)).inc()
        if signals.poisoning_hit:
            self.poisoning_hits.inc()
        if signals.tamper_reject:
            self.tamper_rejects.inc()
        if lag_seconds is not None:
            self.pipeline_lag.observe(lag_seconds)

    def _tool_label(self, tool: str) -> str:
        label = self._tools(tool)
        if label not in self._tools_created:
            # A tool's first call creates its every outcome, so ratios and rate() see zeros rather than gaps.
            for outcome in OUTCOME_LABELS.values():
                self.management_calls.labels(label, outcome)
            self._tools_created.add(label)
        return label

    def hitl_counts(self) -> dict[tuple[str, str], int]:
        """The HITL decision counter's current values, by (side, decision): what Grafana reads, read back.

        Collects this one counter only (the registry-wide lookup would collect every metric per value).
        """
        counts = {
            (side, decision): 0 for side in HITL_SIDE_LABELS.values() for decision in HITL_DECISION_LABELS.values()
        }
        for family in self.hitl_decisions.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels["side"], sample.labels["decision"]] = int(sample.value)
        return counts
