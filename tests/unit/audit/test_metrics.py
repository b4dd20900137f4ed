"""The audit metrics: names, zeros for known label combinations, counting from records, bounded labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from saip.audit import records
from saip.audit.metrics import CACHED_SIGNALS, MAX_TOOLS, AuditMetrics
from saip.v1 import common_pb2
from tests.unit.audit.samples import management_call, risk_event, tool_call


def fresh() -> AuditMetrics:
    return AuditMetrics(CollectorRegistry())


def value(metrics: AuditMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def counted(metrics: AuditMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample's value but the creation times."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def test_known_label_combinations_export_zero_before_any_record() -> None:
    exported = generate_latest(fresh().registry).decode()

    for line in (
        'saip_audit_hitl_decisions_total{decision="elicit-failed",side="chat"} 0.0',
        'saip_audit_risk_events_total{severity="warn",type="MANAGEMENT"} 0.0',
        'saip_audit_risk_events_total{severity="info",type="sandbox-guard-blocked"} 0.0',
        'saip_audit_records_total{kind="risk"} 0.0',
        'saip_audit_rejected_records_total{reason="undecodable"} 0.0',
        "saip_audit_poisoning_hits_total 0.0",
        "saip_audit_tamper_rejects_total 0.0",
        "saip_audit_chain_length 0.0",
        "saip_audit_pending_records 0.0",
        "saip_audit_pipeline_lag_seconds_count 0.0",
    ):
        assert line in exported


def test_a_management_call_counts_its_tool_outcome_decision_and_derived_risk_event() -> None:
    metrics = fresh()
    record = management_call(outcome=common_pb2.OUTCOME_DECLINED, hitl=common_pb2.HITL_DECISION_DECLINED)

    metrics.chained([(records.signals(record), 0.2)])

    assert value(metrics, "saip_audit_management_calls_total", tool="saip_tools_publish", outcome="declined") == 1
    assert value(metrics, "saip_audit_management_calls_total", tool="saip_tools_publish", outcome="ok") == 0
    assert value(metrics, "saip_audit_hitl_decisions_total", side="server", decision="declined") == 1
    assert value(metrics, "saip_audit_risk_events_total", type="MANAGEMENT", severity="warn") == 1
    assert value(metrics, "saip_audit_records_total", kind="management") == 1
    assert value(metrics, "saip_audit_pipeline_lag_seconds_sum") == 0.2


def test_hitl_counts_are_the_counters_values_and_skip_calls_without_a_question() -> None:
    metrics = fresh()
    for record in (
        management_call("m-1", hitl=common_pb2.HITL_DECISION_APPROVED),
        management_call("m-2", hitl=common_pb2.HITL_DECISION_APPROVED),
        management_call("m-3"),  # no question asked
        tool_call("t-1", hitl=common_pb2.HITL_DECISION_TIMEOUT),
        tool_call("t-2", hitl=common_pb2.HITL_DECISION_APPROVED, side=common_pb2.HITL_SIDE_CHAT),
        tool_call("t-3"),
    ):
        metrics.chained([(records.signals(record), None)])

    counts = metrics.hitl_counts()

    assert {key: count for key, count in counts.items() if count} == {
        ("server", "approved"): 2,
        ("server", "timeout"): 1,
        ("chat", "approved"): 1,
    }
    assert len(counts) == 10  # every side and decision, zeros included
    for (side, decision), count in counts.items():
        assert value(metrics, "saip_audit_hitl_decisions_total", side=side, decision=decision) == count
    assert records.approval(counts) == (4, 0.75)


def test_risk_events_count_guard_reasons_poisoning_hits_and_tamper_rejects() -> None:
    metrics = fresh()
    for record in (
        risk_event("r-1", reason="network"),
        risk_event("r-2", reason="network"),
        risk_event("r-3", reason="filesystem"),
        risk_event("r-4", risk_type="poisoning-hit", reason=""),
        risk_event("r-5", risk_type="hash-ledger-mismatch"),
    ):
        metrics.chained([(records.signals(record), None)])

    assert value(metrics, "saip_audit_sandbox_guard_blocks_total", reason="network") == 2
    assert value(metrics, "saip_audit_sandbox_guard_blocks_total", reason="filesystem") == 1
    assert value(metrics, "saip_audit_poisoning_hits_total") == 1
    assert value(metrics, "saip_audit_tamper_rejects_total") == 1
    assert value(metrics, "saip_audit_risk_events_total", type="sandbox-guard-blocked", severity="warn") == 3
    assert value(metrics, "saip_audit_records_total", kind="risk") == 5


def test_tool_names_past_the_bound_fold_into_other() -> None:
    metrics = fresh()
    for n in range(MAX_TOOLS + 5):
        metrics.chained([(records.signals(management_call(f"m-{n}", tool=f"saip_tool_{n}")), None)])

    assert value(metrics, "saip_audit_management_calls_total", tool="other", outcome="ok") == 5
    assert value(metrics, "saip_audit_management_calls_total", tool=f"saip_tool_{MAX_TOOLS}", outcome="ok") is None


def test_a_batch_counts_what_its_records_count_one_at_a_time() -> None:
    batch = [
        management_call("m-1", hitl=common_pb2.HITL_DECISION_APPROVED),
        management_call("m-2", hitl=common_pb2.HITL_DECISION_APPROVED),
        management_call("m-3", outcome=common_pb2.OUTCOME_ERROR),
        tool_call("t-1", hitl=common_pb2.HITL_DECISION_TIMEOUT),
        risk_event("r-1", reason="network"),
        risk_event("r-2", risk_type="poisoning-hit", reason=""),
    ]
    together, one_by_one = fresh(), fresh()

    together.chained([(records.signals(record), 0.1) for record in batch])
    for record in batch:
        one_by_one.chained([(records.signals(record), 0.1)])

    assert counted(together) == counted(one_by_one)
    assert value(together, "saip_audit_management_calls_total", tool="saip_tools_publish", outcome="ok") == 2
    assert value(together, "saip_audit_pipeline_lag_seconds_count") == len(batch)


def test_counting_goes_on_right_once_the_cache_of_signals_starts_afresh() -> None:
    metrics = fresh()
    tools = CACHED_SIGNALS + 10  # as many distinct signals: the cache fills and starts afresh
    for n in range(tools):
        metrics.chained([(records.signals(management_call(f"m-{n}", tool=f"tool_{n}")), None)])
    metrics.chained([(records.signals(management_call(tool="tool_0")), None)])
    metrics.chained([(records.signals(management_call(tool=f"tool_{tools - 1}")), None)])

    assert value(metrics, "saip_audit_records_total", kind="management") == tools + 2
    assert value(metrics, "saip_audit_management_calls_total", tool="tool_0", outcome="ok") == 2
    assert value(metrics, "saip_audit_management_calls_total", tool="other", outcome="ok") == tools - MAX_TOOLS + 1
