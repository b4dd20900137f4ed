"""The shipyard over gRPC with the real tools and knowledge services on a real nats-server: ship, run locally,
connect with the MCP SDK in both eras, call an authored and a knowledge tool, out-of-date, stop, delete, tokens,
crash restarts, and the refusals of bad input."""

from __future__ import annotations

import json
from typing import Any

import grpc
import httpx
import pytest

from saip.common.natsd import LocalNats
from saip.v1 import shipyard_pb2, tools_pb2
from tests.integration.shipyard_support import (
    AUTHORED_TOOL,
    KNOWLEDGE_TOOL,
    proposal,
    shipped_client,
    yard,
)
from tests.integration.tools_support import save
from tests.unit.tools.specs import document
from tests.waiting import eventually

pytestmark = pytest.mark.integration


async def refused(call: Any, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await call
    assert failure.value.code() == code, failure.value.details()
    return str(failure.value.details())


async def test_ship_run_connect_in_both_eras_call_both_kinds_then_stop_and_delete(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        report = await y.shipyard.Validate(proposal())
        assert report.ok, report.problems
        assert [(t.name, t.kind) for t in report.tools] == [(AUTHORED_TOOL, "authored"), (KNOWLEDGE_TOOL, "knowledge")]
        shipped = await y.shipyard.Ship(proposal())
        assert shipped.server.version == 1 and len(shipped.server.bundle_sha256) == 64
        again = await y.shipyard.Ship(proposal())
        assert again.server.version == 2  # each ship is a new version

        status = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops", expected_version=2))
        assert status.state == "running" and status.target == "local" and status.running_version == 2
        assert not status.out_of_date
        token = (await y.shipyard.GetToken(shipyard_pb2.ShippedServerRequest(name="ops"))).token

        for mode in ("legacy", "auto"):
            async with shipped_client(status.endpoint, token, mode=mode) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names == [AUTHORED_TOOL, KNOWLEDGE_TOOL]
                added = await client.call_tool(AUTHORED_TOOL, {"a": 2, "b": 40})
                assert not added.is_error and json.loads(added.content[0].text) == {"sum": 42}  # type: ignore[union-attr]
                found = await client.call_tool(KNOWLEDGE_TOOL, {"query": "roll back the payment gateway"})
                assert not found.is_error
                results = json.loads(found.content[0].text)["results"]  # type: ignore[union-attr]
                assert results and results[0]["document"] == "runbook.md"

        async with httpx.AsyncClient() as http:
            wrong = await http.post(status.endpoint, headers={"Authorization": "Bearer not-its-token"}, json={})
            missing = await http.post(status.endpoint, json={})
        assert wrong.status_code == missing.status_code == 401

        logs = await y.shipyard.GetLogs(shipyard_pb2.LogsRequest(name="ops", lines=50))
        assert logs.masked and any("shipped server serving" in line for line in logs.lines)
        assert not any(token in line for line in logs.lines)

        # The source tool changes: the shipped server says it is out of date, naming the part.
        await y.tools.DeleteTool(tools_pb2.DeleteToolRequest(name=AUTHORED_TOOL))
        await save(y.tools, document(AUTHORED_TOOL, description="Adds two integers; the sum comes back."))
        stale = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="ops"))
        assert stale.out_of_date and [line.split(":")[0] for line in stale.stale_parts] == [AUTHORED_TOOL]

        stopped = await y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="ops"))
        assert stopped.state == "stopped"
        deleted = await y.shipyard.Delete(shipyard_pb2.DeleteShippedServerRequest(name="ops"))
        assert deleted.versions_deleted == 2
        listed = await y.shipyard.ListServers(shipyard_pb2.ListShippedServersRequest())
        assert list(listed.servers) == []
