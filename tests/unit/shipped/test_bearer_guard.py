"""A shipped server's HTTP app: every request but /healthz needs the server's bearer token."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from saip.shipped.server import BearerGuard

TOKEN = "t" * 43


def _guarded() -> TestClient:
    async def answer(request: object) -> PlainTextResponse:
        return PlainTextResponse("served")

    app = Starlette(routes=[Route("/mcp", answer, methods=["POST"]), Route("/healthz", answer)])
    return TestClient(BearerGuard(app, TOKEN))


def test_a_request_without_the_token_is_refused_with_a_bearer_challenge() -> None:
    client = _guarded()
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = client.post("/mcp", headers=headers)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="saip-shipped", error="invalid_token"'
        assert refused.json() == {"error": "This server needs its bearer token: 'Authorization: Bearer <token>'."}


def test_the_token_opens_mcp_and_healthz_needs_none() -> None:
    client = _guarded()
    assert client.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}"}).text == "served"
    assert client.get("/healthz").text == "served"
