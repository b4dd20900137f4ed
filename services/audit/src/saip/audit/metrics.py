"""Every metric of the audit service: what the Safety dashboard and saip_monitor_* read.

Labels come from records, so each label is bounded: outcomes, sides, decisions and severities are fixed
vocabularies, and tool names, risk types and guard reasons fold into "other" past a fixed number of values.
Known label combinations are created up front so they export 0 before the first record.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator

from prometheus_client import REGISTRY, CollectorRegistry, Counter

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
from saip.common.metrics import Metrics, each

OTHER = "other"
MAX_TOOLS = 200
MAX_RISK_TYPES = 50
MAX_GUARD_REASONS = 50
# Distinct signals whose counters are kept at hand; a signal holds a tool name, so the cache starts afresh when full.
CACHED_SIGNALS = 4096
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


class AuditMetrics(Metrics):
    """The audit metrics on one registry (the process-wide one in the service; a fresh one per test). The metrics are
    declared one entry each, a parallel table like every service's metrics object."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        super().__init__(registry)
        self.management_calls = self.counter(
            "saip_audit_management_calls", "Management tool calls chained, by tool and outcome", ["tool", "outcome"]
        )
        self.hitl_decisions = self.counter(
            "saip_audit_hitl_decisions",
            "Approval decisions of chained calls, by the gate that asked and the decision",
            ["side", "decision"],
            known=itertools.product(HITL_SIDE_LABELS.values(), HITL_DECISION_LABELS.values()),
        )
        self.risk_events = self.counter(
            "saip_audit_risk_events",
            "Risk events chained (MANAGEMENT events derived from calls included), by type and severity",
            ["type", "severity"],
            known=itertools.product(KNOWN_RISK_TYPES, SEVERITY_LABELS.values()),
        )
        self.sandbox_guard_blocks = self.counter(
            "saip_audit_sandbox_guard_blocks", "Sandbox guard blocks reported, by the guard's reason", ["reason"]
        )
        self.poisoning_hits = self.counter("saip_audit_poisoning_hits", "Tool poisoning hits reported")
        self.tamper_rejects = self.counter(
            "saip_audit_tamper_rejects", "Definitions withheld because their fingerprint changed (hash-ledger-mismatch)"
        )
        self.records = self.counter(
            "saip_audit_records", "Audit records chained, by kind", ["kind"], known=each(*KINDS)
        )
        self.rejected_records = self.counter(
            "saip_audit_rejected_records",
            "Messages on a record subject that could not be chained, by reason",
            ["reason"],
            known=each(*REJECT_REASONS),
        )
        self.duplicate_records = self.counter(
            "saip_audit_duplicate_records",
            "Records delivered again after they were chained (redeliveries), not chained twice",
        )
        self.chain_conflicts = self.counter(
            "saip_audit_chain_conflicts", "Appends refused because another collector had extended the chain first"
        )
        self.chain_length = self.gauge("saip_audit_chain_length", "Index of the chain's last entry")
        self.pipeline_lag = self.histogram(
            "saip_audit_pipeline_lag_seconds",
            "Time from a record's own timestamp to its entry in the chain",
            buckets=LAG_BUCKETS,
        )
        self.pending_records = self.gauge(
            "saip_audit_pending_records",
            "Records published but not yet chained (the collector consumer's pending and unacknowledged)",
        )
        self._tools = BoundedLabel(MAX_TOOLS)
        self._tools_created: set[str] = set()
        self._risk_types = BoundedLabel(MAX_RISK_TYPES, KNOWN_RISK_TYPES)
        self._guard_reasons = BoundedLabel(MAX_GUARD_REASONS)
        self._cached: dict[Signals, tuple[Counter, ...]] = {}
        # The HITL decision counter's values, kept beside it as it goes up (`hitl_counts`).
        self._hitl_counts = dict.fromkeys(
            itertools.product(HITL_SIDE_LABELS.values(), HITL_DECISION_LABELS.values()), 0
        )

    def chained(self, batch: Iterable[tuple[Signals, float | None]]) -> None:
        """Count chained records, each given by its signals and its lag (record time to chain time; None when the
        record has no time).

        Each counter goes up once per batch, by how many of the batch's records it counts, through children looked
        up once per distinct signals: a lookup by labels (a lock and the labels' checks) for every counter of every
        record cost more than all the rest of counting.
        """
        tally: collections.Counter[Signals] = collections.Counter()
        for signals, lag_seconds in batch:
            tally[signals] += 1
            if lag_seconds is not None:
                self.pipeline_lag.observe(lag_seconds)
        for signals, count in tally.items():
            for counter in self._counters(signals):
                counter.inc(count)
            if signals.hitl is not None:
                self._hitl_counts[signals.hitl] = self._hitl_counts.get(signals.hitl, 0) + count

    def _counters(self, signals: Signals) -> tuple[Counter, ...]:
        counters = self._cached.get(signals)
        if counters is None:
            if len(self._cached) >= CACHED_SIGNALS:
                self._cached.clear()
            counters = self._cached[signals] = tuple(self._counted_by(signals))
        return counters

    def _counted_by(self, signals: Signals) -> Iterator[Counter]:
        """The counters (label children) one record of these signals goes into."""
        yield self.records.labels(signals.kind)
        if signals.management is not None:
            tool, outcome = signals.management
            yield self.management_calls.labels(self._tool_label(tool), outcome)
        if signals.hitl is not None:
            yield self.hitl_decisions.labels(*signals.hitl)
        if signals.risk_event is not None:
            risk_type, severity = signals.risk_event
            yield self.risk_events.labels(self._risk_types(risk_type), severity)
        if signals.guard_block_reason is not None:
            yield self.sandbox_guard_blocks.labels(self._guard_reasons(signals.guard_block_reason))
        if signals.poisoning_hit:
            yield self.poisoning_hits
        if signals.tamper_reject:
            yield self.tamper_rejects

    def _tool_label(self, tool: str) -> str:
        label = self._tools(tool)
        if label not in self._tools_created:
            # A tool's first call creates its every outcome, so ratios and rate() see zeros rather than gaps.
            for outcome in OUTCOME_LABELS.values():
                self.management_calls.labels(label, outcome)
            self._tools_created.add(label)
        return label

    def hitl_counts(self) -> dict[tuple[str, str], int]:
        """The HITL decision counter's current values, by (side, decision): what Grafana reads.

        Kept beside the counter, which goes up only in `chained`, by the same counts: reading the counter back means
        collecting it (its ten children's samples made and thrown away) on every `saip_monitor_hitl` call, where a
        copy of these is a dict's.
        """
        return dict(self._hitl_counts)
