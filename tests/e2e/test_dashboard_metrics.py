"""Every metric a dashboard queries is exported by the stack started as `make run` starts it.

The launcher prints where each service serves /metrics; each is scraped once. A `saip_<service>_` series must come
from that service; the shared series (`saip_grpc_server_*`, `saip_build_info`) from any. Series of a service that is
not in services/* yet are skipped by that prefix, so the check is strict as soon as the service exists. Series of
the infrastructure (the NATS exporter, Qdrant, Prometheus's `up`) are listed by name with what exports them.
"""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.contract.deployment import INFRASTRUCTURE_METRICS, SERVICES, dashboard_metrics, exported_names
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e
# Scrapes the services' /metrics and changes nothing: it runs on the session's shared stack (tests/e2e/conftest.py).
SHARED_STACK = True

SHARED_PREFIXES = ("saip_grpc_server_", "saip_build_")
KNOWN_SERVICES = ("gateway", "audit", "tools", "knowledge", "shipyard")


def owner(metric: str) -> str | None:
    """The service whose prefix the metric carries, or None for the series every service shares."""
    if metric.startswith(SHARED_PREFIXES):
        return None
    service = metric.removeprefix("saip_").split("_", 1)[0]
    assert service in KNOWN_SERVICES, f"{metric} carries the prefix of no saip service"
    return service


def scrape(url: str) -> set[str]:
    reply = httpx.get(url, timeout=10)
    reply.raise_for_status()
    return {
        name
        for family in text_string_to_metric_families(reply.text)
        for name in exported_names(family.name, family.type)
    }


def test_the_launcher_says_where_every_service_serves_its_metrics(stack: Stack) -> None:
    assert sorted(stack.metrics) == SERVICES
    assert stack.metrics["gateway"] == f"{stack.url}/metrics"


def test_every_metric_a_dashboard_queries_is_exported_by_the_running_stack(stack: Stack) -> None:
    exported = {service: scrape(url) for service, url in stack.metrics.items()}
    anywhere = set().union(*exported.values())
    missing: dict[str, list[str]] = {}
    checked = 0
    for metric, dashboards in sorted(dashboard_metrics().items()):
        if metric in INFRASTRUCTURE_METRICS:
            continue
        service = owner(metric)
        if service is not None and service not in SERVICES:
            continue
        checked += 1
        if metric not in (anywhere if service is None else exported[service]):
            missing[metric] = sorted(dashboards)
    assert missing == {}
    assert checked >= 20
