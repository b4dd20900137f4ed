"""The shipyard area's gateway side: its tools and their levels, its resources and prompt, and the summaries it
writes without asking the service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from saip.gateway.areas.shipyard.client import ShipyardClient
from saip.gateway.areas.shipyard.contribution import GUIDE_URI, STATUS_URI, ShipyardArea
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import InvalidArguments
from saip.gateway.surface.expected import NOTHING
from saip.gateway.surface.management import Caller, Level
from saip.v1 import shipyard_pb2 as pb


@pytest.fixture
async def area() -> AsyncIterator[ShipyardArea]:
    # Port 1 has no service: anything that reached the client would fail as unreachable.
    channel = ServiceChannel("shipyard", "127.0.0.1:1", deadline=0.5)
    try:
        yield ShipyardArea(ShipyardClient(channel))
    finally:
        await channel.close()


async def test_the_tools_and_their_levels_follow_the_specification(area: ShipyardArea) -> None:
    assert {tool.name: tool.level for tool in area.tools()} == {
        "saip_shipyard_list_servers": Level.READ,
        "saip_shipyard_list_shippable": Level.READ,
        "saip_shipyard_validate": Level.READ,
        "saip_shipyard_status": Level.READ,
        "saip_shipyard_logs": Level.READ,
        "saip_shipyard_targets": Level.READ,
        "saip_shipyard_ship": Level.WRITE,
        "saip_shipyard_stop": Level.WRITE,
        "saip_shipyard_run": Level.DESTRUCTIVE,
        "saip_shipyard_delete": Level.DESTRUCTIVE,
    }
    assert [r.uri for r in area.resources()] == [GUIDE_URI, STATUS_URI]
    assert [p.name for p in area.prompts()] == ["saip_shipyard_server"]


async def test_the_ship_summary_names_the_server_and_its_tools(area: ShipyardArea) -> None:
    ship = {tool.name: tool for tool in area.tools()}["saip_shipyard_ship"]
    arguments = ship.bind({"name": "ops", "description": "Runbook answers.", "tools": ["adder", "runbook_search"]})
    assert (await ship.approval_for(arguments)).summary == "ship 'ops' with adder, runbook_search as a new version"


@pytest.mark.parametrize(
    "arguments",
    [
        {"name": "ops", "target": "nomad"},
        {"name": "ops", "port": 80},
        {"name": "ops", "token": "x"},
    ],
)
async def test_run_arguments_that_do_not_fit_are_refused_before_any_call(
    area: ShipyardArea, arguments: dict[str, object]
) -> None:
    run = {tool.name: tool for tool in area.tools()}["saip_shipyard_run"]
    with pytest.raises(InvalidArguments):
        run.bind(arguments)


class PlannedClient:
    """The shipyard as the planner reads it (v2 of 'ops'); what the handler then sends is kept."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def plan_run(self, request: pb.RunRequest) -> pb.RunPlan:
        port = request.port or 41234  # the plan chooses a port when none was asked
        return pb.RunPlan(
            name="ops",
            target="local",
            version=2,
            bundle_sha256="ab" * 32,
            command=f"python -m x --port {port}",
            usable=True,
            port=port,
        )

    async def run(self, request: pb.RunRequest) -> pb.ServerStatus:
        self.sent.append(request)
        return pb.ServerStatus(server=pb.ShippedServer(name="ops", version=2), state="running")

    async def status(self, name: str) -> pb.ServerStatus:
        return pb.ServerStatus(server=pb.ShippedServer(name="ops", version=2, bundle_sha256="cd" * 32))

    async def delete(self, request: pb.DeleteShippedServerRequest) -> pb.DeleteShippedServerReply:
        self.sent.append(request)
        return pb.DeleteShippedServerReply(server=pb.ShippedServer(name="ops", version=2), versions_deleted=2)


async def test_run_and_delete_are_bound_to_the_version_hash_and_port_the_approval_described() -> None:
    client = PlannedClient()
    area = ShipyardArea(client)  # type: ignore[arg-type]
    tools = {tool.name: tool for tool in area.tools()}
    run = tools["saip_shipyard_run"]
    arguments = run.bind({"name": "ops"})
    approval = await run.approval_for(arguments)
    assert approval.summary == f"run 'ops' v2 (bundle {'ab' * 6}) on the local target: `python -m x --port 41234`"
    await run.handler(arguments, Caller(), approval.expected)
    asked = run.bind({"name": "ops", "port": 18000})
    await run.handler(asked, Caller(), (await run.approval_for(asked)).expected)
    delete = tools["saip_shipyard_delete"]
    removal = delete.bind({"name": "ops"})
    await delete.handler(removal, Caller(), (await delete.approval_for(removal)).expected)
    ran, ran_on_its_port, deleted = client.sent
    assert (ran.expected_version, ran.expected_sha256, ran.port) == (2, "ab" * 32, 41234)
    assert ran_on_its_port.port == 18000
    assert (deleted.expected_version, deleted.expected_sha256) == (2, "cd" * 32)


class ShippedWhileRunning:
    """'ops' shipped again as v2 while v1 runs, and 'idle' stopped after v1 with v2 shipped since."""

    STATUSES = (
        pb.ServerStatus(
            server=pb.ShippedServer(name="ops", version=2),
            state="running",
            target="local",
            endpoint="http://127.0.0.1:9000/mcp",
            running_version=1,
        ),
        pb.ServerStatus(server=pb.ShippedServer(name="idle", version=2), state="stopped", running_version=1),
    )

    async def servers(self) -> pb.ListShippedServersReply:
        return pb.ListShippedServersReply(servers=self.STATUSES)

    async def status(self, name: str) -> pb.ServerStatus:
        return next(found for found in self.STATUSES if found.server.name == name)


async def test_a_server_shipped_again_while_it_runs_is_said_to_run_its_earlier_version() -> None:
    tools = {tool.name: tool for tool in ShipyardArea(ShippedWhileRunning()).tools()}  # type: ignore[arg-type]
    servers, status = tools["saip_shipyard_list_servers"], tools["saip_shipyard_status"]
    listed = await servers.handler(servers.bind({}), Caller(), NOTHING)
    running = await status.handler(status.bind({"name": "ops"}), Caller(), NOTHING)
    stopped = await status.handler(status.bind({"name": "idle"}), Caller(), NOTHING)
    assert listed.message == "2 shipped servers: ops v2 (v1 running), idle v2 (stopped)."
    assert running.message == (
        "'ops' v1 is running on local at http://127.0.0.1:9000/mcp; v2 is shipped and not running: "
        "saip_shipyard_stop, then saip_shipyard_run, serves it."
    )
    assert running.data["runningVersion"] == 1 and running.data["version"] == 2
    assert stopped.message == "'idle' v2 is stopped."  # its next run serves v2


class Refusing:
    """A shipyard that would refuse the run ('ops' runs already) and the delete ('ops' runs)."""

    async def plan_run(self, request: pb.RunRequest) -> pb.RunPlan:
        return pb.RunPlan(name="ops", target="local", version=1, usable=True, refused="'ops' v1 is already running")

    async def status(self, name: str) -> pb.ServerStatus:
        return pb.ServerStatus(server=pb.ShippedServer(name="ops", version=1), delete_refused="'ops' is running")


async def test_the_plans_of_a_run_or_delete_the_service_would_refuse_carry_its_refusal_for_the_gate() -> None:
    tools = {tool.name: tool for tool in ShipyardArea(Refusing()).tools()}  # type: ignore[arg-type]
    run, delete = tools["saip_shipyard_run"], tools["saip_shipyard_delete"]
    assert (await run.approval_for(run.bind({"name": "ops"}))).refused == "'ops' v1 is already running"
    assert (await delete.approval_for(delete.bind({"name": "ops"}))).refused == "'ops' is running"
