"""The console's sign-in and live feed on real gateway replicas and a real NATS: the session cookie's flags, the
tokens that do not sign in, the CSRF proof on every change, sign-out on every replica, and the feed telling a
console what changed, whichever replica changed it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from saip.common.natsd import LocalNats, free_port
from saip.gateway.console.routes import MCP_TOKEN, WRONG_TOKEN
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from tests.integration.gateways import ADMIN, replica_settings
from tests.waiting import eventually

pytestmark = pytest.mark.integration


@asynccontextmanager
async def replica(tmp_path: Path, nats_url: str, name: str) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient]]:
    gateway = Gateway(replica_settings(tmp_path, nats_url, name, gateway_port=free_port()))
    async with (
        over_http(gateway),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{gateway.settings.gateway_port}") as web,
    ):
        yield gateway, web


async def sign_in(web: httpx.AsyncClient) -> str:
    """Sign in as the console does; the client keeps the cookie. The CSRF proof the console keeps in memory."""
    answer = await web.post("/api/v1/session", json={"token": ADMIN})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["csrf"])


async def test_signing_in_gives_a_cookie_the_page_cannot_read_and_no_other_site_sends(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with replica(tmp_path, nats_server.url, "one") as (_, web):
        assert (await web.get("/api/v1/session")).json()["data"] == {"signedIn": False}
        answer = await web.post("/api/v1/session", json={"token": ADMIN})
        cookie = answer.headers["set-cookie"]
        flags = {flag.strip().lower() for flag in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= flags
        assert "secure" not in flags  # served over plain http here; behind https the cookie is Secure
        assert ADMIN not in cookie
        # The cookie alone opens the person's API: no token in the browser.
        status = await web.get("/api/v1/status")
        assert status.status_code == 200 and "Authorization" not in status.request.headers
        assert (await web.get("/api/v1/session")).json()["data"]["signedIn"] is True


async def test_the_mcp_token_and_a_wrong_one_do_not_sign_in(nats_server: LocalNats, tmp_path: Path) -> None:
    async with replica(tmp_path, nats_server.url, "one") as (gateway, web):
        mcp_token = await gateway.token_service.rotate(created_by="test")
        for token, said in ((mcp_token, MCP_TOKEN), ("n" * 40, WRONG_TOKEN)):
            answer = await web.post("/api/v1/session", json={"token": token})
            assert (answer.status_code, answer.json()["message"]) == (401, said)
            assert "set-cookie" not in answer.headers
        assert (await web.get("/api/v1/status")).status_code == 401


async def test_a_change_without_the_csrf_proof_is_refused_and_changes_nothing(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with replica(tmp_path, nats_server.url, "one") as (gateway, web):
        csrf = await sign_in(web)
        refused = await web.post("/api/v1/mcp-token")
        assert refused.status_code == 403 and "CSRF proof" in refused.json()["message"]
        forged = await web.post("/api/v1/mcp-token", headers={"X-Saip-Csrf": "0" * 64})
        assert forged.status_code == 403
        assert not gateway.tokens.is_set
        done = await web.post("/api/v1/mcp-token", headers={"X-Saip-Csrf": csrf})
        assert done.status_code == 200 and gateway.tokens.matches(done.json()["data"]["token"])


async def test_a_session_signed_out_on_one_replica_is_refused_on_the_other(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        replica(tmp_path, nats_server.url, "one") as (_, one),
        replica(tmp_path, nats_server.url, "two") as (_, two),
    ):
        csrf = await sign_in(one)
        two.cookies.update(one.cookies)
        assert (await two.get("/api/v1/status")).status_code == 200  # any replica opens the cookie
        out = await one.delete("/api/v1/session", headers={"X-Saip-Csrf": csrf})
        assert out.status_code == 200 and 'saip_session=""' in out.headers["set-cookie"]

        async def refused() -> bool:
            return (await two.get("/api/v1/status")).status_code == 401

        await eventually(refused, within=1)


async def test_the_feed_tells_a_console_on_one_replica_of_a_change_made_through_the_other(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with (
        replica(tmp_path, nats_server.url, "one") as (_, one),
        replica(tmp_path, nats_server.url, "two") as (_, two),
    ):
        await sign_in(one)
        with anyio.fail_after(15):
            async with one.stream("GET", "/api/v1/events") as events:
                assert events.headers["content-type"].startswith("text/event-stream")
                lines = events.aiter_lines()
                assert await anext(lines) == "retry: 2000"
                assert [await anext(lines) for _ in range(3)] == ["id: 0", "event: hello", "data: {}"]
                rotated = await two.post("/api/v1/mcp-token", headers={"Authorization": f"Bearer {ADMIN}"})
                assert rotated.status_code == 200
                told = [line async for line in _until(lines, "event: token")]
                assert told[-1] == "event: token"
                assert await anext(lines) == 'data: {"key":"mcp-token"}'


async def _until(lines: AsyncIterator[str], wanted: str) -> AsyncIterator[str]:
    async for line in lines:
        yield line
        if line == wanted:
            return
