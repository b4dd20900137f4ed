"""Every metric a service exports is named in the docs a person reads to watch it (README.md and docs/*.md), as
Prometheus exposes it: a counter with `_total`, a gauge or histogram by its own name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from saip.audit.metrics import AuditMetrics
from saip.common.metrics import GrpcMetrics, Metrics
from saip.gateway.metrics import GatewayMetrics
from saip.knowledge.metrics import KnowledgeMetrics
from saip.shipyard.metrics import ShipyardMetrics
from saip.tools.metrics import ToolsMetrics

ROOT = Path(__file__).parents[2]
# BENCHMARKS.md records measurements, not what a metric is.
DOCS = "\n".join(
    path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    if path.name != "BENCHMARKS.md"
)
METRICS: tuple[type[Metrics], ...] = (
    GatewayMetrics,
    ToolsMetrics,
    KnowledgeMetrics,
    AuditMetrics,
    ShipyardMetrics,
    GrpcMetrics,
)


def exported(metrics: type[Metrics]) -> list[str]:
    """The names `metrics` exposes on /metrics (a counter's with `_total`)."""
    registry = CollectorRegistry()
    metrics(registry)
    return sorted(f"{family.name}_total" if family.type == "counter" else family.name for family in registry.collect())


@pytest.mark.parametrize("metrics", METRICS, ids=lambda m: m.__name__)
def test_every_exported_metric_is_named_in_the_docs(metrics: type[Metrics]) -> None:
    missing = [name for name in exported(metrics) if not re.search(rf"`{name}[`{{]", DOCS)]
    assert not missing, f"{metrics.__name__} exports {missing}, which no doc names: say what each counts"
