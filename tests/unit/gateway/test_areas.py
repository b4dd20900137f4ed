"""The areas as the gateway sees them: each names a service the gateway has an address key for, offers tools under
its own prefix, and a service without an address says which key to set."""

from __future__ import annotations

import pytest

from saip.gateway.areas import AREAS
from saip.gateway.clients import ServiceChannel
from saip.gateway.config import CATEGORIES, GatewaySettings
from saip.gateway.errors import ServiceNotConfigured
from saip.gateway.server import Gateway
from saip.v1.tools_pb2_grpc import ToolsServiceStub
from tests.unit.gateway.probe import SEALING_KEY

ADMIN = "a" * 40


def test_each_area_names_a_service_with_an_address_key() -> None:
    for area in AREAS:
        assert f"{area.service.addressed}.addr" in GatewaySettings.keys


def test_each_area_offers_its_tools_under_its_own_prefix() -> None:
    gateway = Gateway(GatewaySettings.load(admin_token=ADMIN, approval_sealing_key=SEALING_KEY))
    assert [area.name for area in gateway.areas] == [
        "monitor",
        "monitor",  # saip_monitor_mcp_status, over the upstream service
        "tools",
        "mcp",
        "mcp-register",
        "expose",
        "knowledge",
    ]
    for area in gateway.areas:
        assert area.name in CATEGORIES
        # mcp-register extends the mcp area: its tools are saip_mcp_*.
        prefix = "saip_mcp_" if area.name == "mcp-register" else f"saip_{area.name}_"
        assert all(tool.name.startswith(prefix) for tool in area.contribution.tools())
        assert area.router.routes


def test_a_service_without_an_address_says_which_key_to_set() -> None:
    channel = ServiceChannel("tools", None)
    assert not channel.configured
    with pytest.raises(ServiceNotConfigured) as missing:
        channel.stub(ToolsServiceStub)
    assert str(missing.value) == (
        "The tools service is not configured: set tools.addr (SAIP_TOOLS_ADDR) and restart the gateway."
    )
