"""The MCP token through NATS: a change made on one replica flips the surface on every replica, also after an outage."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from tests.integration.gateways import replica_settings
from tests.waiting import eventually

pytestmark = pytest.mark.integration


async def test_rotation_and_removal_on_one_replica_flip_the_surface_on_the_other(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    one = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    two = Gateway(replica_settings(tmp_path, nats_server.url, "two"))
    async with one.running(), two.running():
        assert not one.registrar.status.surface and not two.registrar.status.surface
        assert two.registrar.status.reason == "no bearer token on the built-in server"

        token = await one.token_service.rotate(created_by="test")
        await eventually(lambda: two.registrar.status.surface)
        assert two.tokens.matches(token) and not two.tokens.matches(token + "x")
        assert "saip_monitor_overview" in two.registrar.status.tools
        assert [tool.name for tool in two.registry.tools()] == [tool.name for tool in one.registry.tools()]

        await two.token_service.remove()
        await eventually(lambda: not one.registrar.status.surface)
        assert not one.tokens.matches(token)


async def test_a_replica_that_was_cut_off_converges_when_nats_returns(nats_server: LocalNats, tmp_path: Path) -> None:
    one = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    async with one.running():
        first = await one.token_service.rotate(created_by="test")
        nats_server.restart()
        # A second replica changes the token while the first is still reconnecting.
        two = Gateway(replica_settings(tmp_path, nats_server.url, "two"))
        async with two.running():
            second = await two.token_service.rotate(created_by="test")
            await eventually(lambda: one.tokens.matches(second), within=20)
            assert not one.tokens.matches(first)


async def test_the_token_is_kept_as_a_hash_only(nats_server: LocalNats, tmp_path: Path) -> None:
    one = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    async with one.running():
        token = await one.token_service.rotate(created_by="test")
        js = one.nc.jetstream()
        entry = await (await js.key_value("saip-auth")).get("mcp-token")
    assert entry.value is not None and token.encode() not in entry.value


async def test_a_configured_token_is_not_replaced_by_the_shared_record(nats_server: LocalNats, tmp_path: Path) -> None:
    configured = Gateway(replica_settings(tmp_path, nats_server.url, "cfg", mcp_server_auth_token="c" * 40))
    other = Gateway(replica_settings(tmp_path, nats_server.url, "api"))
    async with configured.running(), other.running():
        assert configured.registrar.status.surface
        await other.token_service.rotate(created_by="test")
        await eventually(lambda: other.registrar.status.surface)
        assert configured.tokens.matches("c" * 40) and configured.tokens.source == "configuration"
