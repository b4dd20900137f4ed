"""The shipyard's rules over in-memory fakes of its ports: a run starts exactly the command its plan quotes on every
target, a name no server can have is refused with the rule on every call, ship, run, stop and delete leave nothing
behind, a run that does not come up is not recorded, runs start again after a restart, declared servers are
read-only, and an export holds the files a run writes. (tests/integration/test_shipyard_service.py runs the same
service over NATS, the real tools and knowledge services and real processes.)"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from saip.shipyard.config import DeclaredServer
from saip.shipyard.errors import Conflict, InvalidProposal, RuleRefused
from saip.shipyard.metrics import ShipyardMetrics
from saip.shipyard.packing import Places
from saip.shipyard.ports import Completed
from saip.shipyard.shipyard import Shipyard
from saip.v1 import shipyard_pb2
from tests.unit.shipyard.fakes import FakeCommands, FakeSources, FakeSupervisor, MemoryArchives, MemoryRecords
from tests.unit.tools.specs import document

COMPOSE_USABLE = {
    ("docker", "compose", "version"): Completed(0, "Docker Compose version v2.40.3"),
    ("docker", "info", "--format", "{{.ServerVersion}}"): Completed(0, "28.2.2"),
}
KUBERNETES_USABLE = {("kubectl", "config", "current-context"): Completed(0, "kind-saip")}
NAME_RULE = "is not a server name; use 1 to 40 lower-case letters, digits, '_' or '-', starting with a letter"


@dataclass
class Yard:
    shipyard: Shipyard
    records: MemoryRecords
    archives: MemoryArchives
    supervisor: FakeSupervisor
    commands: FakeCommands
    home: Path


def yard(home: Path, **declared: Any) -> Yard:
    sources = FakeSources()
    sources.author(document("adder"))
    records, archives, supervisor = MemoryRecords(), MemoryArchives(), FakeSupervisor()
    commands = FakeCommands({"docker", "kubectl"}, {**COMPOSE_USABLE, **KUBERNETES_USABLE})
    metrics = ShipyardMetrics(CollectorRegistry())
    places = Places(home, "saip/shipped:0.1.0", None)
    servers = [{"name": name, "description": "Adds.", "tools": ["adder"], **d} for name, d in declared.items()]
    shipyard = Shipyard(
        sources,
        records,
        archives,
        supervisor,
        commands,
        metrics,
        places,
        [DeclaredServer.model_validate(server) for server in servers],
    )
    return Yard(shipyard, records, archives, supervisor, commands, home)


def proposal(name: str = "ops", transport: str = "") -> shipyard_pb2.BundleProposal:
    return shipyard_pb2.BundleProposal(name=name, description="Adds numbers.", transport=transport, tools=["adder"])


def run(name: str = "ops", target: str = "local", port: int = 0) -> shipyard_pb2.RunRequest:
    return shipyard_pb2.RunRequest(name=name, target=target, port=port)


async def test_a_local_run_starts_exactly_the_command_its_plan_quoted(tmp_path: Path) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    plan = await y.shipyard.plan_run(run(), {})
    assert plan.port and not plan.refused
    again = await y.shipyard.plan_run(run(), {})
    assert (again.port, again.command) == (plan.port, plan.command)  # a second plan (the retry's) reads the same

    status = await y.shipyard.run(run(port=plan.port), {})
    assert y.supervisor.started == [shlex.split(plan.command)]
    assert status.command == plan.command and status.endpoint == f"http://127.0.0.1:{plan.port}/mcp"
    argv = shlex.split(plan.command)
    assert argv[argv.index("--port") + 1] == str(plan.port)
    assert {"--host", "--stop-with-stdin"} <= set(argv)


async def test_a_run_asked_without_a_port_runs_on_the_port_its_plan_chose(tmp_path: Path) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    plan = await y.shipyard.plan_run(run(), {})
    status = await y.shipyard.run(run(), {})  # the person's REST call: no plan, no port asked
    assert status.command == plan.command


async def test_compose_kubernetes_and_stdio_runs_start_exactly_the_command_their_plan_quoted(tmp_path: Path) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    await y.shipyard.ship(proposal("ops-stdio", transport="stdio"))
    for target in ("compose", "kubernetes"):
        plan = await y.shipyard.plan_run(run(target=target), {})
        y.commands.answers[tuple(shlex.split(plan.command))] = Completed(0, "started")
        status = await y.shipyard.run(run(target=target, port=plan.port), {})
        assert y.commands.ran[-1] == shlex.split(plan.command) and status.command == plan.command, target
        assert status.state == "running"
        down = (
            ["docker", "compose", "-f", shlex.split(plan.command)[3], "-p", "saip-shipped-ops", "down"]
            if target == "compose"
            else ["kubectl", "delete", *shlex.split(plan.command)[2:]]
        )
        y.commands.answers[tuple(down)] = Completed(0, "stopped")
        assert (await y.shipyard.stop("ops")).state == "stopped"
        assert y.commands.ran[-1] == down
    plan = await y.shipyard.plan_run(run("ops-stdio"), {})
    status = await y.shipyard.run(run("ops-stdio"), {})
    assert status.endpoint == status.command == plan.command and status.state == "ready"
    assert "--port" not in plan.command and y.supervisor.started == []


@pytest.mark.parametrize("name", ["Ñ", "o p", "Ops", "a/b", "x" * 41, "ops.v1", "é-server"])
async def test_a_name_no_server_can_have_is_refused_with_the_rule_on_every_call(tmp_path: Path, name: str) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    calls = [
        lambda: y.shipyard.status(name),
        lambda: y.shipyard.logs(name, 10),
        lambda: y.shipyard.token(name),
        lambda: y.shipyard.plan_run(run(name), {}),
        lambda: y.shipyard.run(run(name), {}),
        lambda: y.shipyard.stop(name),
        lambda: y.shipyard.delete(shipyard_pb2.DeleteShippedServerRequest(name=name)),
        lambda: _drain(y.shipyard.export(shipyard_pb2.ExportRequest(name=name, target="compose"))),
    ]
    for call in calls:
        with pytest.raises(InvalidProposal) as refused:
            await call()
        assert NAME_RULE in str(refused.value) and f"'{name.strip()}'" in str(refused.value)
    assert list(y.records.values) == ["server.ops"]


async def _drain(pieces: Any) -> list[shipyard_pb2.ExportPiece]:
    return [piece async for piece in pieces]


async def test_ship_run_stop_and_delete_leave_nothing_behind(tmp_path: Path) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    shipped = await y.shipyard.ship(proposal())
    assert shipped.server.version == 2 and sorted(y.archives.objects) == ["ops/v1.tar", "ops/v2.tar"]
    running = await y.shipyard.run(shipyard_pb2.RunRequest(name="ops", expected_version=2), {})
    assert (running.state, running.running_version) == ("running", 2)
    token = await y.shipyard.token("ops")
    assert token.token and y.supervisor.servers["ops"].env["SAIP_SHIPPED_TOKEN"] == token.token
    with pytest.raises(RuleRefused, match="stop it first"):
        await y.shipyard.delete(shipyard_pb2.DeleteShippedServerRequest(name="ops"))
    with pytest.raises(Conflict, match="not the one the approval described"):
        await y.shipyard.run(shipyard_pb2.RunRequest(name="ops", expected_version=1), {})

    assert (await y.shipyard.stop("ops")).state == "stopped"
    with pytest.raises(RuleRefused, match="nothing to stop"):
        await y.shipyard.stop("ops")
    deleted = await y.shipyard.delete(shipyard_pb2.DeleteShippedServerRequest(name="ops", expected_version=2))
    assert deleted.versions_deleted == 2
    assert (y.records.values, y.archives.objects) == ({}, {})
    assert not (tmp_path / "shipyard" / "ops").exists()


async def test_a_run_that_does_not_come_up_is_refused_and_not_recorded(tmp_path: Path) -> None:
    y = yard(tmp_path)
    y.supervisor.failing["ops"] = "the process exited with code 1: boom"
    await y.shipyard.ship(proposal())
    with pytest.raises(RuleRefused, match="'ops' did not start: the process exited with code 1: boom"):
        await y.shipyard.run(run(), {})
    assert "run.ops" not in y.records.values and (await y.shipyard.status("ops")).state == "shipped"


async def test_a_restart_runs_again_what_ran_with_its_port_and_token_and_not_what_was_stopped(tmp_path: Path) -> None:
    y = yard(tmp_path)
    for name in ("ops", "idle"):
        await y.shipyard.ship(proposal(name))
        await y.shipyard.run(run(name), {})
    await y.shipyard.stop("idle")
    first = await y.shipyard.status("ops")
    token = (await y.shipyard.token("ops")).token

    restarted = Shipyard(
        FakeSources(), y.records, y.archives, supervisor := FakeSupervisor(), y.commands,
        ShipyardMetrics(CollectorRegistry()), Places(tmp_path, "saip/shipped:0.1.0", None),
    )  # fmt: skip
    await restarted.resume({})
    assert sorted(supervisor.servers) == ["ops"] and supervisor.servers["ops"].env["SAIP_SHIPPED_TOKEN"] == token
    again = await restarted.status("ops")
    assert (again.state, again.endpoint, again.command) == ("running", first.endpoint, first.command)
    assert (await restarted.status("idle")).state == "stopped"


async def test_a_declared_server_refuses_every_change_by_a_call(tmp_path: Path) -> None:
    y = yard(tmp_path, ops={"target": "local"})
    await y.shipyard.declare({})
    assert (await y.shipyard.status("ops")).managed_by == "shipyard.servers"
    calls = [
        lambda: y.shipyard.ship(proposal()),
        lambda: y.shipyard.plan_run(run(), {}),
        lambda: y.shipyard.run(run(), {}),
        lambda: y.shipyard.stop("ops"),
        lambda: y.shipyard.delete(shipyard_pb2.DeleteShippedServerRequest(name="ops")),
    ]
    for call in calls:
        with pytest.raises(RuleRefused, match="'ops' is managed by configuration; change or remove it under"):
            await call()
    assert (await y.shipyard.status("ops")).state == "running"


async def test_an_export_holds_the_files_a_run_on_its_target_writes_with_a_token_of_its_own(tmp_path: Path) -> None:
    y = yard(tmp_path)
    await y.shipyard.ship(proposal())
    for target in ("compose", "kubernetes"):
        pieces = await _drain(y.shipyard.export(shipyard_pb2.ExportRequest(name="ops", target=target)))
        header = pieces[0].header
        assert (header.name, header.target, header.version) == ("ops", target, 1)
        files = {piece.chunk.path: piece.chunk for piece in pieces[1:]}
        plan = await y.shipyard.plan_run(run(target=target), {})
        y.commands.answers[tuple(shlex.split(plan.command))] = Completed(0, "started")
        await y.shipyard.run(run(target=target), {})
        written = tmp_path / "shipyard" / "ops" / "v1" / target
        on_disk = sorted(path.relative_to(written).as_posix() for path in written.rglob("*") if path.is_file())
        assert sorted(files) == on_disk, target
        for path, chunk in files.items():
            if path != "token.env":
                assert chunk.data == (written / path).read_bytes(), path
        assert files["token.env"].mode == 0o600 and files["token.env"].data != (written / "token.env").read_bytes()
    compose = await _drain(y.shipyard.export(shipyard_pb2.ExportRequest(name="ops", target="compose")))
    assert compose[0].header.command == "docker compose -f compose.yaml -p saip-shipped-ops up -d"
    kubernetes = await _drain(y.shipyard.export(shipyard_pb2.ExportRequest(name="ops", target="kubernetes")))
    assert kubernetes[0].header.command == "kubectl apply -k ."
    with pytest.raises(InvalidProposal, match="target 'local' has no files to export; export for compose or"):
        await _drain(y.shipyard.export(shipyard_pb2.ExportRequest(name="ops", target="local")))
