"""The tools service's metrics exist, with their bounded labels, before the first run (dashboards read zeros)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from saip.tools.metrics import GUARD_REASONS, ToolsMetrics


def test_every_metric_is_exported_with_its_known_labels_at_zero() -> None:
    registry = CollectorRegistry()
    ToolsMetrics(registry)
    text = generate_latest(registry).decode()
    for line in (
        'saip_tools_sandbox_runs_total{kind="call",result="error"} 0.0',
        'saip_tools_sandbox_guard_blocks_total{reason="private-address"} 0.0',
        'saip_tools_sandbox_guard_blocks_total{reason="time-limit"} 0.0',
        "saip_tools_poisoning_hits_total 0.0",
        'saip_tools_changes_total{action="publish"} 0.0',
        'saip_tools_tools{state="missing-requirements"} 0.0',
        "saip_tools_sandbox_workers 0.0",
    ):
        assert line in text
    assert 'saip_tools_sandbox_run_seconds_count{kind="test"} 0.0' in text
    assert len(GUARD_REASONS) == len(set(GUARD_REASONS))
