"""The gateway's HTTP app sends /mcp straight to the guarded MCP transport and everything else to the REST API."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from saip.gateway.app import Front, create_app
from saip.gateway.config import GatewaySettings
from saip.gateway.server import Gateway

TOKEN = "m" * 32


def _gateway(tmp_path: Path) -> Gateway:
    # Built without I/O and served without its lifespan: nothing here needs NATS or a service.
    settings = GatewaySettings.load(
        home=tmp_path,
        admin_token="a" * 32,
        approval_sealing_key="s" * 43,
        mcp_server_auth_token=TOKEN,
        audit_spool_dir=tmp_path / "spool",
    )
    return Gateway(settings)


def test_mcp_is_guarded_without_passing_the_rest_api(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path)
    app = create_app(gateway)
    assert isinstance(app, Front)
    client = TestClient(app)
    for path in ("/mcp", "/mcp/"):  # the exact path goes first; the slash still reaches the guard through the mount
        answer = client.post(path, json={}, headers={"Authorization": "Bearer wrong"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith('Bearer realm="saip"')
    exposition = generate_latest(gateway.metrics.registry).decode()
    assert 'saip_gateway_auth_rejections_total{surface="mcp"} 2.0' in exposition
    assert "saip_gateway_http_requests_total{" not in exposition  # /mcp has its own metrics, not the REST API's


def test_every_other_path_is_the_rest_api_s(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path)
    client = TestClient(create_app(gateway))
    assert client.get("/api/openapi.json").json()["info"]["title"] == "saip gateway"
    assert client.get("/api/v1/management/status").status_code == 401  # no admin token sent
    exposition = generate_latest(gateway.metrics.registry).decode()
    assert 'route="/api/v1/management/status",status="401"' in exposition


def test_a_refused_mcp_request_is_answered_in_the_envelope_of_every_refusal(tmp_path: Path) -> None:
    client = TestClient(create_app(_gateway(tmp_path)))
    missing, wrong = client.post("/mcp", json={}), client.post("/mcp", json={}, headers={"Authorization": "Bearer x"})
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.headers["www-authenticate"] == 'Bearer realm="saip"'
    assert wrong.headers["www-authenticate"] == 'Bearer realm="saip", error="invalid_token"'
    assert wrong.json() == {
        "ok": False,
        "message": "A valid MCP bearer token is required: send 'Authorization: Bearer <token>'.",
        "persisted": False,
        "restartRequired": False,
        "warnings": [],
        "data": None,
    }
