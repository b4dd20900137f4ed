"""The one metrics model: a service's metrics live on the registry they are given, known series export 0 before the
first event, and the build info is published once per registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from saip.common.metrics import Metrics, each, publish_build_info


class ProbeMetrics(Metrics):
    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self.calls = self.counter("saip_probe_calls", "Calls by outcome", ["outcome"], known=each("ok", "failed"))
        self.seconds = self.histogram("saip_probe_seconds", "Time of one call", buckets=(0.1, 1.0))
        self.size = self.gauge("saip_probe_size", "Items held")


def test_metrics_live_on_their_own_registry_and_known_series_export_zero() -> None:
    one, two = ProbeMetrics(CollectorRegistry()), ProbeMetrics(CollectorRegistry())
    one.calls.labels("ok").inc()
    assert one.registry.get_sample_value("saip_probe_calls_total", {"outcome": "ok"}) == 1
    assert two.registry.get_sample_value("saip_probe_calls_total", {"outcome": "ok"}) == 0
    exported = generate_latest(two.registry).decode()
    assert 'saip_probe_calls_total{outcome="failed"} 0.0' in exported
    assert "saip_probe_seconds_count 0.0" in exported and "saip_probe_size 0.0" in exported


def test_the_build_info_is_published_once_per_registry() -> None:
    registry = CollectorRegistry()
    publish_build_info("common", registry)
    publish_build_info("common", registry)  # a second gateway in one test process
    exported = generate_latest(registry).decode()
    assert exported.count("saip_build_info{") == 1
    assert 'saip_build_info{service="common",version="0.1.0"} 1.0' in exported
