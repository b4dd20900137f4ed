"""The gateway's bounds: a multi-megabyte answer is cut to what one SSE event may carry (the SDK client drops an event
above 1 MiB) and says so, through the SDK's HTTP client against a gateway process; a burst of reads from one client
meets the per-client rate limit, against a real tools service, while other clients and the service still answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.gateway.surface import results
from saip.v1 import common_pb2
from tests.integration.gateways import ADMIN_HEADERS, GatewayProcess, ready, replica_settings, start_replica
from tests.integration.publishing import Catalog, publishing, served
from tests.integration.tools_support import running_tools
from tests.results import text
from tests.waiting import eventually

pytestmark = pytest.mark.integration

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="limits-client", version="1.0")
TOOLS = "saip.v1.ToolsService"
SSE_EVENT_LIMIT = 1024 * 1024


class FloodCatalog(Catalog):
    """Serves `flood`, whose answer is about three megabytes of JSON (quotes included, so escaping makes it grow);
    only its text, as the whole reply must stay under gRPC's 4 MiB message limit."""

    async def call(self, request: common_pb2.CallServedToolRequest, context: Any) -> common_pb2.CallServedToolReply:
        return common_pb2.CallServedToolReply(text=json.dumps({"lines": ['say "hi"'] * 200_000}))


@asynccontextmanager
async def gateway(home: Path, nats_url: str, tools_addr: str) -> AsyncIterator[tuple[GatewayProcess, str]]:
    """A gateway process serving the probe tools and the catalog's tools; yields it and its MCP token."""
    replica = start_replica(home, nats_url, "limits", SAIP_TOOLS_ADDR=tools_addr)
    try:
        await ready(replica)
        async with httpx.AsyncClient(timeout=10) as client:
            reply = await client.post(f"{replica.url}/api/v1/mcp-token", headers=ADMIN_HEADERS)
        yield replica, str(reply.json()["data"]["token"])
    finally:
        replica.stop()


@asynccontextmanager
async def mcp_client(replica: GatewayProcess, token: str, mode: str) -> AsyncIterator[Client]:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(f"{replica.url}/mcp", http_client=http)
    async with http, Client(transport, mode=mode, client_info=CLIENT) as client:
        yield client


@pytest.mark.parametrize("mode", ERAS)
async def test_a_multi_megabyte_answer_is_cut_to_fit_one_sse_event_and_says_so(
    nats_server: LocalNats, tmp_path: Path, mode: str
) -> None:
    catalog = FloodCatalog()
    catalog.serve(served("flood"))
    async with (
        publishing(TOOLS, catalog) as address,
        gateway(tmp_path, nats_server.url, address) as (replica, token),
        mcp_client(replica, token, mode) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"flood", "saip_probe_flood"} <= tools
        management = await client.call_tool("saip_probe_flood", {"name": "x", "count": 3})
        published = await client.call_tool("flood", {})

    envelope = json.loads(text(management))
    assert envelope["ok"] is True and envelope["message"] == "flooded"
    assert envelope["warnings"][-1].startswith("The result was cut: its data was ")
    assert envelope["data"].startswith('{"text": "\\"x\\"x')  # the start of the data's JSON
    assert results.wire_size(text(management)) <= results.DEFAULT_LIMIT < SSE_EVENT_LIMIT
    assert isinstance(management, types.CallToolResult) and management.structured_content is None

    cut = text(published)
    assert cut.startswith('{"lines": ["say \\"hi\\""')
    limit = f"above the {results.DEFAULT_LIMIT}-byte limit (mcp-server.max-result-bytes)"
    assert cut.endswith(f"{limit}. Ask the tool for less to see the rest.]")
    assert results.wire_size(cut) <= results.DEFAULT_LIMIT
    assert isinstance(published, types.CallToolResult) and published.structured_content is None


async def test_a_burst_of_5000_reads_meets_the_rate_limit_while_others_and_the_service_still_answer(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with running_tools(nats_server.url) as tools:
        settings = replica_settings(
            tmp_path,
            nats_server.url,
            "burst",
            tools_addr=f"127.0.0.1:{tools.port}",
            mcp_server_auth_token="t" * 24,
            management_rate_limit=100,
            management_limit_window_seconds=3600,
        )
        gateway = Gateway(settings)
        async with gateway.running():
            await eventually(lambda: gateway.registry.tool("saip_tools_list") is not None)
            outcomes: dict[str, int] = {}
            async with Client(gateway.mcp, mode="auto", client_info=CLIENT) as burst:
                for _ in range(5000):
                    result = await burst.call_tool("saip_tools_list", {})
                    assert isinstance(result, types.CallToolResult)
                    said = "ok" if not result.is_error else text(result).split(" s, ")[0]
                    outcomes[said] = outcomes.get(said, 0) + 1
            other = types.Implementation(name="other-client", version="1.0")
            async with Client(gateway.mcp, mode="auto", client_info=other) as calm:
                listed = await calm.call_tool("saip_tools_list", {})
            limited = gateway.metrics.registry.get_sample_value("saip_gateway_limited_total", {"limit": "calls"})
            tracked = len(gateway.calls)

    assert outcomes["ok"] == 100
    [(refusal, count)] = [(said, count) for said, count in outcomes.items() if said != "ok"]
    assert count == 4900 == limited
    assert '"message": "Tool \'saip_tools_list\' was not run: this client made 100 management calls within 3600' in (
        refusal
    )
    assert isinstance(listed, types.CallToolResult) and not listed.is_error
    assert tracked == 2  # the two clients of this window, nothing per call
