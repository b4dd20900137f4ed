"""The shipyard area through a real gateway and the real tools, knowledge and shipyard services on a real NATS: the
tools and their levels, the run's approval quoting the exact command, a run that never hands the AI the token, the
status resource, the guide and the prompt."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from saip.common.natsd import LocalNats
from saip.gateway.areas.shipyard.contribution import GUIDE_URI, STATUS_URI, TOKEN_HIDDEN
from saip.gateway.server import Gateway
from saip.v1 import shipyard_pb2
from tests.integration.answers import Person, envelope
from tests.integration.gateways import replica_settings
from tests.integration.shipyard_support import AUTHORED_TOOL, KNOWLEDGE_TOOL, Yard, declared_status, yard
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="area-client", version="3.1")
TOKEN = "t" * 24


@asynccontextmanager
async def ai_client(y: Yard, home: Path, nats_url: str, person: Person) -> AsyncIterator[Client]:
    """The AI's MCP client of a gateway in front of the shipyard; `person` answers its questions."""
    settings = replica_settings(
        home, nats_url, "one", shipyard_addr=f"127.0.0.1:{y.running.port}", mcp_server_auth_token=TOKEN
    )
    gateway = Gateway(settings)
    async with gateway.running():
        await eventually(lambda: gateway.registry.tool("saip_shipyard_run") is not None)
        async with Client(gateway.mcp, mode="legacy", client_info=CLIENT, elicitation_callback=person) as client:
            yield client


async def test_ship_and_run_through_the_gateway_never_hand_the_ai_the_token(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    person = Person()
    async with (
        yard(nats_server.url, tmp_path / "yard") as y,
        ai_client(y, tmp_path, nats_server.url, person) as client,
    ):
        proposal = {"name": "ops", "description": "Runbook answers.", "tools": [AUTHORED_TOOL, KNOWLEDGE_TOOL]}
        assert envelope(await client.call_tool("saip_shipyard_validate", proposal))["ok"]
        shipped = envelope(await client.call_tool("saip_shipyard_ship", proposal))
        assert shipped["ok"] and shipped["data"]["version"] == 1
        ran = envelope(await client.call_tool("saip_shipyard_run", {"name": "ops", "version": 1}))
        token = (await y.shipyard.GetToken(shipyard_pb2.ShippedServerRequest(name="ops"))).token
        assert ran["ok"] and TOKEN_HIDDEN in ran["message"]
        assert token not in json.dumps(ran) and ran["data"]["state"] == "running"
        status = json.loads((await client.read_resource(STATUS_URI)).contents[0].text)  # type: ignore[union-attr]
        assert [server["state"] for server in status["servers"]] == ["running"]
        guide = (await client.read_resource(GUIDE_URI)).contents[0].text  # type: ignore[union-attr]
        assert "saip_shipyard_validate" in guide and TOKEN_HIDDEN in guide
        prompt = await client.get_prompt("saip_shipyard_server", {"name": "ops"})
        assert GUIDE_URI in prompt.messages[0].content.text  # type: ignore[union-attr]
        stopped = envelope(await client.call_tool("saip_shipyard_stop", {"name": "ops"}))
        assert stopped["data"]["state"] == "stopped"
        deleted = envelope(await client.call_tool("saip_shipyard_delete", {"name": "ops", "version": 1}))
        assert deleted["ok"], deleted["message"]
    run_question = next(question for question in person.questions if "saip_shipyard_run" in question)
    assert "run 'ops' v1 (bundle " in run_question and "on the local target: `" in run_question
    assert "-m saip.shipped --bundle " in run_question


async def test_a_server_declared_in_configuration_runs_at_start_and_is_read_only_to_the_ai(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    person = Person()
    declared = [
        {"name": "ops", "description": "Runbook answers.", "tools": [AUTHORED_TOOL, KNOWLEDGE_TOOL], "target": "local"}
    ]
    async with yard(nats_server.url, tmp_path / "yard", shipyard_servers=declared) as y:

        async def running() -> shipyard_pb2.ServerStatus | None:
            found = await declared_status(y, "ops")
            return found if found is not None and found.state == "running" else None

        started = await eventually(running, within=60, every=0.2)
        async with ai_client(y, tmp_path, nats_server.url, person) as client:
            status = envelope(await client.call_tool("saip_shipyard_status", {"name": "ops"}))
            proposal = {"name": "ops", "description": "Mine now.", "tools": [AUTHORED_TOOL]}
            refusals = [
                envelope(await client.call_tool("saip_shipyard_ship", proposal)),
                envelope(await client.call_tool("saip_shipyard_run", {"name": "ops", "version": 1})),
                envelope(await client.call_tool("saip_shipyard_stop", {"name": "ops"})),
                envelope(await client.call_tool("saip_shipyard_delete", {"name": "ops", "version": 1})),
            ]
        after = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="ops"))

    assert (started.server.name, started.server.version, started.target) == ("ops", 1, "local")
    assert status["data"]["managedBy"] == "shipyard.servers" and status["data"]["state"] == "running"
    managed = (
        "'ops' is managed by configuration; change or remove it under shipyard.servers in saip.yaml and restart the "
        "shipyard service."
    )
    assert [(refused["ok"], managed in refused["message"]) for refused in refusals] == [(False, True)] * 4
    # The run is refused by its plan, before the person is asked; nothing changed.
    assert not any("saip_shipyard_run" in question for question in person.questions)
    assert (after.state, after.server.version, after.server.description) == ("running", 1, "Runbook answers.")
