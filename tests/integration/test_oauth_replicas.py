"""OAuth grants across gateway replicas and restarts: a token issued through one replica is accepted by another at
once, a revocation made through one is refused by the other within the time its watch takes (recorded as
`revocation_propagation_ms`, not asserted), and a token outlives the gateway that issued it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from saip.common.natsd import LocalNats, free_port
from tests.integration.gateways import ADMIN_HEADERS, GatewayProcess, two_replicas
from tests.integration.oauth_support import Flow, oauth_gateway
from tests.waiting import eventually

pytestmark = pytest.mark.integration

PUBLIC = "http://saip.test"


@pytest.fixture
async def replicas(nats_server: LocalNats, tmp_path: Path) -> AsyncIterator[tuple[GatewayProcess, GatewayProcess]]:
    # Reached through one address, as behind a load balancer: a token names that /mcp, whichever replica issued it.
    async with two_replicas(
        tmp_path, nats_server.url, SAIP_OAUTH_ENABLED="true", SAIP_GATEWAY_PUBLIC_URL=PUBLIC
    ) as both:
        yield both


async def test_a_revocation_through_one_replica_is_refused_on_the_other(
    replicas: tuple[GatewayProcess, GatewayProcess], record_property: Callable[[str, object], None]
) -> None:
    one, two = replicas
    async with httpx.AsyncClient(timeout=10) as http:
        flow = Flow(one.url, http, public=PUBLIC)
        await flow.register()
        tokens = await flow.tokens()
        token = tokens["access_token"]
        # Issued through one, accepted by the other at once: the grant is looked up when its watch has not brought it.
        assert await flow.accepted(token, two.url)
        listed = (await http.get(f"{two.url}/api/v1/clients", headers=ADMIN_HEADERS)).json()["data"]["clients"]
        [grant] = [found for found in listed if found["kind"] == "oauth"]

        started = time.perf_counter()
        revoked = await http.delete(f"{one.url}/api/v1/clients/{grant['id']}", headers=ADMIN_HEADERS)
        assert revoked.status_code == 200, revoked.text
        assert not await flow.accepted(token, one.url)

        async def refused_on_two() -> bool:
            return not await flow.accepted(token, two.url)

        await eventually(refused_on_two, every=0.001)
        elapsed_ms = (time.perf_counter() - started) * 1000
        # The refresh token went with the grant, on either replica.
        refreshed = await http.post(
            f"{two.url}/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": flow.client_id,
                "resource": flow.resource,
            },
        )
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    record_property("revocation_propagation_ms", round(elapsed_ms, 1))
    print(f"grant revoked through one replica: its token got 401 on the other after {elapsed_ms:.1f} ms")


async def test_a_token_survives_a_restart_of_the_gateway_that_issued_it(nats_server: LocalNats, tmp_path: Path) -> None:
    port = free_port()
    async with httpx.AsyncClient(timeout=10) as http:
        async with oauth_gateway(tmp_path, nats_server.url, port=port) as served:
            flow = Flow(served.url, http)
            await flow.register()
            tokens = await flow.tokens()
            assert await flow.accepted(tokens["access_token"])
        async with oauth_gateway(tmp_path, nats_server.url, port=port, name="again") as served:
            assert await flow.accepted(tokens["access_token"])
            refreshed = await flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
            assert refreshed.status_code == 200, refreshed.text
            assert await flow.accepted(refreshed.json()["access_token"])
