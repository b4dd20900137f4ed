"""The container health probe says healthy only for a SERVING gRPC service or a 200 from /healthz; the liveness name
stays SERVING while the service cannot serve or drains, which only its readiness says."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from saip.common import healthcheck
from saip.common.grpc_server import LIVENESS, GrpcServer
from saip.common.natsd import free_port
from tests.http_origin import QuietHandler, http_origin


async def test_a_serving_grpc_server_is_healthy_until_it_shuts_down() -> None:
    server = GrpcServer([], "127.0.0.1", 0)
    port = await server.start()
    try:
        assert await anyio.to_thread.run_sync(healthcheck.main, ["grpc", f"127.0.0.1:{port}"]) == 0
        await server.health.enter_graceful_shutdown()
        healthy, said = await anyio.to_thread.run_sync(healthcheck.grpc_serving, f"127.0.0.1:{port}")
        assert not healthy and said.endswith("NOT_SERVING")
    finally:
        await server.stop(0)


async def test_liveness_stays_serving_while_the_service_cannot_serve_and_while_it_drains() -> None:
    # A NATS outage: readiness says NOT_SERVING (out of the Service), liveness SERVING (no restart).
    server = GrpcServer([], "127.0.0.1", 0, cannot_serve=lambda: "NATS is not answering")
    port = await server.start()
    address = f"127.0.0.1:{port}"
    try:
        ready = await anyio.to_thread.run_sync(healthcheck.grpc_serving, address)
        alive = await anyio.to_thread.run_sync(healthcheck.grpc_serving, address, LIVENESS)
        await server.health.enter_graceful_shutdown()
        draining = await anyio.to_thread.run_sync(healthcheck.grpc_serving, address, LIVENESS)
    finally:
        await server.stop(0)
    assert ready == (False, f"{address}: NOT_SERVING")
    assert alive == draining == (True, f"{address}: SERVING")


def test_nothing_listening_is_unhealthy(capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{free_port()}"
    assert healthcheck.main(["grpc", address]) == 1
    assert capsys.readouterr().err == f"unhealthy: {address}: UNAVAILABLE\n"


class _Status(QuietHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 503)
        self.end_headers()


@pytest.fixture
def http_server() -> Iterator[str]:
    with http_origin(_Status) as url:
        yield url


def test_http_is_healthy_only_on_200(http_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert healthcheck.main(["http", f"{http_server}/healthz"]) == 0
    assert healthcheck.main(["http", f"{http_server}/unavailable"]) == 1
    assert capsys.readouterr().err == f"unhealthy: {http_server}/unavailable: 503\n"


def test_a_wrong_invocation_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert healthcheck.main(["tcp", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == healthcheck.USAGE + "\n"
