"""GET /healthz is 200 only when every service the gateway depends on is healthy."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from saip.common.natsd import LocalNats
from saip.gateway.app import create_app
from saip.gateway.server import Gateway
from tests.integration.gateways import replica_settings

pytestmark = pytest.mark.integration


def test_healthz_is_503_naming_what_is_unreachable(nats_server: LocalNats, tmp_path: Path) -> None:
    # Nothing listens on the audit address, so the gateway depends on a service that is down.
    gateway = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    with TestClient(create_app(gateway)) as client:
        reply = client.get("/healthz")
        assert reply.status_code == 503
        assert reply.json() == {"status": "unavailable", "checks": {"nats": "ok", "audit": "unreachable"}}
        nats_server.stop()
        reply = client.get("/healthz")
        assert reply.status_code == 503
        assert reply.json()["checks"]["nats"] == "unreachable"


def test_rest_requests_are_counted_by_route_template(nats_server: LocalNats, tmp_path: Path) -> None:
    settings = replica_settings(tmp_path, nats_server.url, "one")
    gateway = Gateway(settings)
    admin = {"Authorization": f"Bearer {settings.admin_token.get_secret_value()}"}
    with TestClient(create_app(gateway)) as client:
        assert client.get("/api/v1/management/status", headers=admin).status_code == 200
        assert client.get("/api/v1/management/status").status_code == 401
        exposition = client.get("/metrics").text
    assert 'saip_gateway_http_requests_total{method="GET",route="/api/v1/management/status",status="200"}' in exposition
    assert 'saip_gateway_http_requests_total{method="GET",route="/api/v1/management/status",status="401"}' in exposition
    assert 'saip_gateway_auth_rejections_total{surface="api"}' in exposition
