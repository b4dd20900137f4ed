"""The shipyard area's gateway side: its tools and their levels, its resources and prompt, and the summaries it
writes without asking the service."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from saip.gateway.areas.shipyard.client import ShipyardClient
from saip.gateway.areas.shipyard.contribution import GUIDE_URI, STATUS_URI, ShipyardArea
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import InvalidArguments
from saip.gateway.surface.management import Level


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
