"""The areas as the gateway sees them: each names a service the gateway has an address key for (or runs in the
gateway itself, as chat does), offers tools under its own prefix, and a service without an address says which key to
set."""

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


def test_each_area_names_a_service_with_an_address_key_or_runs_in_the_gateway() -> None:
    in_gateway = [area for area in AREAS if area.service is None]
    assert [area.router.__module__ for area in in_gateway] == ["saip.gateway.areas.chat.rest"]
    for area in AREAS:
        if area.service is not None:
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
        "shipyard",
        "chat",
    ]
    for area in gateway.areas:
        assert area.name in CATEGORIES
        # mcp-register extends the mcp area: its tools are saip_mcp_*.
        prefix = "saip_mcp_" if area.name == "mcp-register" else f"saip_{area.name}_"
        assert all(tool.name.startswith(prefix) for tool in area.contribution.tools())
        assert area.router.routes


def test_monitor_offers_the_seed_s_eleven_read_tools() -> None:
    gateway = Gateway(GatewaySettings.load(admin_token=ADMIN, approval_sealing_key=SEALING_KEY))
    monitor = [tool for area in gateway.areas if area.name == "monitor" for tool in area.contribution.tools()]
    assert sorted(tool.name.removeprefix("saip_monitor_") for tool in monitor) == [
        "hitl",
        "logs_tail",
        "management_log",
        "mcp_status",
        "overview",
        "proxied_calls",
        "risk_events",
        "system",
        "tool_calls",
        "trace_get",
        "traces",
    ]
    assert {tool.level.name for tool in monitor} == {"READ"}


def test_a_service_without_an_address_says_which_key_to_set() -> None:
    channel = ServiceChannel("tools", None)
    assert not channel.configured
    with pytest.raises(ServiceNotConfigured) as missing:
        channel.stub(ToolsServiceStub)
    assert str(missing.value) == (
        "The tools service is not configured: set tools.addr (SAIP_TOOLS_ADDR) and restart the gateway."
    )
