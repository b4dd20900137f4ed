"""Prometheus exposition shared by every service: the /metrics endpoint and build info."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Info, start_http_server

BUILD_INFO = Info("saip_build", "Build of the running saip service")


def publish_build_info(service: str) -> None:
    try:
        release = version(f"saip-{service}")
    except PackageNotFoundError:
        release = "unknown"
    BUILD_INFO.info({"service": service, "version": release})


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
