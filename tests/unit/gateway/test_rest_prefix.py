"""The REST API is mounted under /api/v1 by the app (`include_router(..., prefix=PREFIX)`, which spares FastAPI a
second build of every route at the gateway's start): every route is still there, and each request is still counted
under its route's whole template, an area's routes included."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client import generate_latest

from saip.gateway.app import create_app
from saip.gateway.config import GatewaySettings
from saip.gateway.rest import PREFIX
from saip.gateway.server import Gateway


def _gateway(tmp_path: Path) -> Gateway:
    # Built without I/O and served without its lifespan: nothing here needs NATS or a service.
    settings = GatewaySettings.load(
        home=tmp_path, admin_token="a" * 32, approval_sealing_key="s" * 43, audit_spool_dir=tmp_path / "spool"
    )
    return Gateway(settings)


def test_every_rest_route_is_under_the_prefix(tmp_path: Path) -> None:
    client = TestClient(create_app(_gateway(tmp_path)))
    paths = client.get("/api/openapi.json").json()["paths"]
    assert {f"{PREFIX}/status", f"{PREFIX}/audit/overview", f"{PREFIX}/traces/{{trace_id}}"} <= set(paths)
    assert all(path.startswith(f"{PREFIX}/") for path in paths)


def test_a_request_is_counted_under_its_route_s_whole_template(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path)
    client = TestClient(create_app(gateway))
    for path in (f"{PREFIX}/status", f"{PREFIX}/traces/{'0' * 32}", f"{PREFIX}/no/such/route", "/metrics"):
        client.get(path)
    exposition = generate_latest(gateway.metrics.registry).decode()
    for template, status in (
        (f"{PREFIX}/status", 401),
        (f"{PREFIX}/traces/{{trace_id}}", 401),  # an area's route, in a router of its own within the area's
        (f"{PREFIX}/{{path:path}}", 401),  # no admin token: refused before the catch-all's 404
    ):
        assert f'route="{template}",status="{status}"' in exposition
    assert 'route="/metrics",status="200"' in exposition  # the app's own routes are not under the prefix
