"""Prometheus metrics, one model for every service: a service's metrics are an object over the registry it is given
(`ToolsMetrics(registry)`: the process-wide one in the service, a fresh one per test), never module globals.

`Metrics` is the base of those objects: its `counter`, `gauge` and `histogram` create each metric on the object's
registry and, given `known` label values, create those series up front so they export 0 before the first event
(rate() and ratios then see zeros rather than gaps). Beside it: the per-RPC metrics of every gRPC server, the build
info, and the /metrics endpoint of the gRPC services.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from threading import Thread
from typing import TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server
from prometheus_client.metrics import MetricWrapperBase

BUILD_INFO = "saip_build"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)

M = TypeVar("M", bound=MetricWrapperBase)


class Metrics:
    """Metrics on one registry; subclasses create theirs with `counter`, `gauge` and `histogram`."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry

    def counter(
        self, name: str, documentation: str, labels: Sequence[str] = (), *, known: Iterable[Sequence[str]] = ()
    ) -> Counter:
        return _known(Counter(name, documentation, labels, registry=self.registry), known)

    def gauge(
        self, name: str, documentation: str, labels: Sequence[str] = (), *, known: Iterable[Sequence[str]] = ()
    ) -> Gauge:
        return _known(Gauge(name, documentation, labels, registry=self.registry), known)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        known: Iterable[Sequence[str]] = (),
    ) -> Histogram:
        return _known(Histogram(name, documentation, labels, buckets=buckets, registry=self.registry), known)


def _known(metric: M, known: Iterable[Sequence[str]]) -> M:
    for values in known:
        metric.labels(*values)
    return metric


def each(*values: str) -> list[tuple[str]]:
    """Label values of a one-label metric, as `known` takes them."""
    return [(value,) for value in values]


class GrpcMetrics(Metrics):
    """What every saip gRPC server counts (saip.common.grpc_server's interceptor): request rate, errors, latency."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        super().__init__(registry)
        self.handled = self.counter(
            "saip_grpc_server_handled",
            "gRPC calls a saip service finished, by service, method and status code",
            ["grpc_service", "grpc_method", "grpc_code"],
        )
        self.handling = self.histogram(
            "saip_grpc_server_handling_seconds",
            "Time a saip service spent on one unary gRPC call",
            ["grpc_service", "grpc_method"],
            buckets=LATENCY_BUCKETS,
        )


def publish_build_info(service: str, registry: CollectorRegistry = REGISTRY) -> None:
    """`saip_build_info{service, version}` on the registry, once: a second call for the same service (a second
    gateway in one test process) finds it there already."""
    try:
        release = version(f"saip-{service}")
    except PackageNotFoundError:
        release = "unknown"
    labels = {"service": service, "version": release}
    if registry.get_sample_value(f"{BUILD_INFO}_info", labels) is None:
        Info(BUILD_INFO, "Build of the running saip service", registry=registry).info(labels)


class MetricsServer:
    """/metrics on its own port, for the gRPC services (the gateway serves it on its HTTP port)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry = REGISTRY) -> None:
        self._server: WSGIServer
        self._thread: Thread
        self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        self.port = self._server.server_port

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
