"""The shipyard over gRPC with the real tools and knowledge services on a real nats-server: ship, run locally,
connect with the MCP SDK in both eras, call an authored and a knowledge tool and an exposed member of a real upstream
(withheld on a rug pull), out-of-date, stop, delete, tokens, crash restarts, local servers run again after a restart
of the shipyard, and the refusals of bad input."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sys
from typing import Any

import anyio
import grpc
import httpx
import pytest
from mcp import Client, StdioServerParameters

from saip.common.natsd import LocalNats
from saip.shipped.bundle import BUNDLE_FILE
from saip.v1 import shipyard_pb2, tools_pb2, upstream_pb2
from tests.integration.shipyard_support import (
    AUTHORED_TOOL,
    KNOWLEDGE_TOOL,
    SHIPPED_VARIABLE,
    declared_status,
    proposal,
    shipped_client,
    shipyard_over,
    sources,
    yard,
)
from tests.integration.tools_support import publish_tested, save
from tests.unit.tools.specs import document
from tests.upstreams.running import ECHO, started
from tests.waiting import eventually

pytestmark = pytest.mark.integration
FAILED, NOT_FOUND = grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND


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
        assert not status.out_of_date and list(status.withheld) == []
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


async def test_an_exposed_upstream_member_ships_runs_and_is_withheld_by_the_shipped_server_on_a_rug_pull(
    nats_server: LocalNats, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHIPPED_VARIABLE, "k3y-value-for-the-test")
    monkeypatch.setenv("SAIP_SHIPPED_UPSTREAM_REFRESH_SECONDS", "0.2")  # the local target's child reads it
    fast = {"tools_upstream_refresh_seconds": 0.2, "tools_upstream_variables": [SHIPPED_VARIABLE]}
    with started("http", tmp_path / "upstream.json", [ECHO]) as upstream:
        async with yard(nats_server.url, tmp_path, tools_settings=fast) as y:
            headers = {"Authorization": f"Bearer ${{{SHIPPED_VARIABLE}}}"}
            transport, vendor = upstream_pb2.TRANSPORT_STREAMABLE_HTTP, upstream_pb2.TRUST_VENDOR
            server = upstream.server("notes", transport, headers=headers, trust=vendor)  # L2: under the cap
            await y.upstream.AddServer(upstream_pb2.AddServerRequest(server=server))

            async def listed() -> bool:
                reply = await y.upstream.ListServers(upstream_pb2.ListServersRequest())
                return reply.servers[0].state == upstream_pb2.CONNECTION_STATE_CONNECTED

            await eventually(listed)
            member = upstream_pb2.Member(server_id="notes", tool="echo", alias="notes_echo")
            await y.upstream.ApplyExposure(
                upstream_pb2.ApplyExposureRequest(change=upstream_pb2.ExposureChange(add=[member]))
            )
            shippable = await y.shipyard.ListShippable(shipyard_pb2.ListShippableRequest())
            assert [(t.name, t.ready) for t in shippable.tools if t.kind == "upstream"] == [("notes_echo", True)]
            report = await y.shipyard.Validate(proposal("notes", "notes_echo"))
            assert report.ok, report.problems
            assert [(t.kind, list(t.requirements)) for t in report.tools] == [("upstream", [SHIPPED_VARIABLE])]
            await y.shipyard.Ship(proposal("notes", "notes_echo"))
            status = await y.shipyard.Run(shipyard_pb2.RunRequest(name="notes"))
            token = (await y.shipyard.GetToken(shipyard_pb2.ShippedServerRequest(name="notes"))).token
            for mode in ("legacy", "auto"):
                async with shipped_client(status.endpoint, token, mode=mode) as client:
                    assert [t.name for t in (await client.list_tools()).tools] == ["notes_echo"]
                    echoed = await client.call_tool("notes_echo", {"text": "hi"})
                    assert not echoed.is_error and echoed.structured_content == {"text": "hi"}

            upstream.write([{**ECHO, "description": "Echo the arguments back, and remember them."}])
            async with shipped_client(status.endpoint, token, mode="auto") as client:

                async def withheld() -> bool:
                    return [t.name for t in (await client.list_tools()).tools] == []

                await eventually(withheld, within=30)
                refused_call = await client.call_tool("notes_echo", {"text": "hi"})
            assert refused_call.is_error and "(description) since the ship" in refused_call.content[0].text  # type: ignore[union-attr]
            running = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="notes"))
            [withholding] = running.withheld  # the shipyard's status says it too, from the server's own /healthz
            assert withholding.startswith("notes_echo: ") and "(description) since the ship" in withholding

            # Once the person accepts the new definition in saip, the shipped bundle is out of date, naming the part.
            acknowledge = upstream_pb2.ExposureChange(acknowledge_changed=["notes_echo"])

            async def noticed() -> list[upstream_pb2.Acknowledgement]:  # saip's own refresh sees it on its own
                return list((await y.upstream.PlanExposure(acknowledge)).acknowledged)

            [asked] = await eventually(noticed, within=30)
            hashes = {"notes_echo": asked.new_hash}
            await y.upstream.ApplyExposure(
                upstream_pb2.ApplyExposureRequest(change=acknowledge, acknowledged_hashes=hashes)
            )
            stale = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="notes"))
            assert stale.out_of_date and [line.split(":")[0] for line in stale.stale_parts] == ["notes_echo"]
            await y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="notes"))


async def test_a_crashed_local_server_is_restarted_and_status_counts_it(nats_server: LocalNats, tmp_path: Any) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        await y.shipyard.Ship(proposal())
        first = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
        local = y.running.local.get("ops")
        assert local is not None and local.process is not None
        crashed = local.process.pid
        os.kill(crashed, signal.SIGKILL)

        async def restarted() -> shipyard_pb2.ServerStatus | None:
            status = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="ops"))
            alive = local.process is not None and local.process.pid != crashed
            return status if status.state == "running" and status.restarts == 1 and alive else None

        status = await eventually(restarted, within=60)
        assert "exited with code -9" in status.last_error and status.endpoint == first.endpoint
        token = (await y.shipyard.GetToken(shipyard_pb2.ShippedServerRequest(name="ops"))).token
        async with shipped_client(status.endpoint, token, mode="legacy") as client:
            added = await client.call_tool(AUTHORED_TOOL, {"a": 1, "b": 1})
        assert json.loads(added.content[0].text) == {"sum": 2}  # type: ignore[union-attr]
        await y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="ops"))


async def test_status_read_while_a_new_version_starts_shows_the_process_not_the_last_run_record(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    """A local run starts its process, then writes its run record: a status read in between shows the process."""
    ops = shipyard_pb2.ShippedServerRequest(name="ops")
    async with yard(nats_server.url, tmp_path) as y:
        await y.shipyard.Ship(proposal())
        first = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
        await y.shipyard.Stop(ops)
        await y.shipyard.Ship(proposal())  # v2
        records = y.running.shipyard._records
        put_run = records.put_run
        between: list[shipyard_pb2.ServerStatus] = []

        async def put_after_a_status(record: shipyard_pb2.RunRecord) -> None:
            between.append(await y.shipyard.GetStatus(ops))
            await put_run(record)

        records.put_run = put_after_a_status  # type: ignore[method-assign]
        try:
            second = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
        finally:
            records.put_run = put_run  # type: ignore[method-assign]
        await y.shipyard.Stop(ops)

    assert first.running_version == 1 and second.running_version == 2
    [status] = between
    assert (status.state, status.running_version, status.endpoint) == ("running", 2, second.endpoint)


async def test_a_run_starts_exactly_the_command_its_plan_quoted(nats_server: LocalNats, tmp_path: Any) -> None:
    """What the approval quotes is the argv that runs: host, port and the stop with the shipyard's stdin included."""
    ops = shipyard_pb2.ShippedServerRequest(name="ops")
    async with yard(nats_server.url, tmp_path) as y:
        await y.shipyard.Ship(proposal())
        plan = await y.shipyard.PlanRun(shipyard_pb2.RunRequest(name="ops"))
        status = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops", port=plan.port))
        local = y.running.local.get("ops")
        await y.shipyard.Stop(ops)

    assert status.command == plan.command and local is not None and local.argv == shlex.split(plan.command)
    assert status.endpoint == f"http://127.0.0.1:{plan.port}/mcp"
    assert shlex.split(plan.command)[-5:] == ["--host", "127.0.0.1", "--port", str(plan.port), "--stop-with-stdin"]


async def test_a_name_no_server_can_have_is_refused_with_the_rule_on_every_call_never_as_an_outage(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        calls = {
            "GetStatus": lambda name: y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name=name)),
            "GetLogs": lambda name: y.shipyard.GetLogs(shipyard_pb2.LogsRequest(name=name, lines=5)),
            "GetToken": lambda name: y.shipyard.GetToken(shipyard_pb2.ShippedServerRequest(name=name)),
            "PlanRun": lambda name: y.shipyard.PlanRun(shipyard_pb2.RunRequest(name=name)),
            "Run": lambda name: y.shipyard.Run(shipyard_pb2.RunRequest(name=name)),
            "Stop": lambda name: y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name=name)),
            "Delete": lambda name: y.shipyard.Delete(shipyard_pb2.DeleteShippedServerRequest(name=name)),
        }
        for name in ("Ñ", "ops\u00e9", "a b"):
            for rpc, call in calls.items():
                refusal = await refused(call(name), grpc.StatusCode.INVALID_ARGUMENT)
                assert refusal == (
                    f"'{name}' is not a server name; use 1 to 40 lower-case letters, digits, '_' or '-', starting "
                    "with a letter"
                ), rpc


async def test_a_stdio_server_speaks_to_the_sdk_in_both_eras(nats_server: LocalNats, tmp_path: Any) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        await y.shipyard.Ship(proposal("ops-stdio", transport="stdio"))
        status = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops-stdio"))
        assert status.state == "ready" and status.endpoint.split()[1:3] == ["-m", "saip.shipped"]
        argv = shlex.split(status.endpoint)
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        for mode in ("legacy", "auto"):
            with anyio.fail_after(60):
                async with Client(server, mode=mode) as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    found = await client.call_tool(KNOWLEDGE_TOOL, {"query": "error rate dashboard", "topK": 2})
            assert names == [AUTHORED_TOOL, KNOWLEDGE_TOOL]
            assert json.loads(found.content[0].text)["results"]  # type: ignore[union-attr]


async def test_bad_proposals_are_refused_with_what_to_do_and_nothing_is_shipped(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        await save(y.tools, document("untested"))
        report = await y.shipyard.Validate(proposal("saip_ops", AUTHORED_TOOL, AUTHORED_TOOL, "untested", "nowhere"))
        assert not report.ok
        text = " ".join(report.problems)
        assert "'saip_ops' starts with 'saip_'" in text
        assert "named more than once" in text
        assert "untested: its current revision has no Local Pass" in text
        assert "nowhere: no authored tool, knowledge tool or exposed upstream member has this name" in text
        refusal = await refused(y.shipyard.Ship(proposal("saip_ops")), grpc.StatusCode.FAILED_PRECONDITION)
        assert "cannot ship" in refusal and "saip_shipyard_validate" in refusal
        assert list((await y.shipyard.ListServers(shipyard_pb2.ListShippedServersRequest())).servers) == []


async def test_bad_runs_stops_and_deletes_are_refused_and_leave_nothing_running(
    nats_server: LocalNats, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHIP_TEST_API_KEY", "k3y-value-for-the-test")
    async with yard(nats_server.url, tmp_path) as y:
        keyed = document("keyed", staticVariables={"apiKey": "${SHIP_TEST_API_KEY}"})
        await publish_tested(y.tools, keyed)
        report = await y.shipyard.Validate(proposal("keyed", "keyed"))
        assert report.ok and list(report.requirements) == ["SHIP_TEST_API_KEY"]
        await y.shipyard.Ship(proposal("keyed", "keyed"))
        shipped = await y.shipyard.Ship(proposal())

        never = await refused(y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="ops")), FAILED)
        assert "not running, so there is nothing to stop" in never
        unknown = await refused(y.shipyard.Delete(shipyard_pb2.DeleteShippedServerRequest(name="nope")), NOT_FOUND)
        assert "No shipped server named 'nope'" in unknown and "'ops'" in unknown

        moved = shipyard_pb2.RunRequest(name="ops", expected_sha256="0" * 64)
        assert "not the one the approval described" in await refused(y.shipyard.Run(moved), grpc.StatusCode.ABORTED)

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
            busy = await refused(y.shipyard.Run(shipyard_pb2.RunRequest(name="ops", port=port)), FAILED)
        assert f"port {port} is in use" in busy

        monkeypatch.delenv("SHIP_TEST_API_KEY")
        unset = await refused(y.shipyard.Run(shipyard_pb2.RunRequest(name="keyed")), FAILED)
        assert "SHIP_TEST_API_KEY" in unset and "Ask the person to set them" in unset

        for name in ("ops", "keyed"):
            status = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name=name))
            assert status.state == "shipped" and y.running.local.get(name) is None

        # A bundle changed on disk after the ship is refused by its hashes, at run and by the runtime itself.
        await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
        await y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="ops"))
        bundle_file = tmp_path / "shipyard" / "ops" / f"v{shipped.server.version}" / BUNDLE_FILE
        document_ = json.loads(bundle_file.read_text())
        document_["tools"][0]["spec"]["code"] = "return { sum: 0 };"
        bundle_file.write_text(json.dumps(document_))
        tampered = await refused(y.shipyard.Run(shipyard_pb2.RunRequest(name="ops")), FAILED)
        assert f"the part '{AUTHORED_TOOL}' does not match its sha256" in tampered
        with anyio.fail_after(60):
            runtime = await anyio.run_process(
                [sys.executable, "-m", "saip.shipped", "--bundle", str(bundle_file)], check=False
            )
        assert runtime.returncode == 1 and b"does not match its sha256" in runtime.stdout

        bundle_file.unlink()  # the next run unpacks the version again from saip-bundles
        await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
        running = await refused(y.shipyard.Delete(shipyard_pb2.DeleteShippedServerRequest(name="ops")), FAILED)
        assert "stop it first" in running
        again = await refused(y.shipyard.Run(shipyard_pb2.RunRequest(name="ops")), FAILED)
        assert again == (
            f"'ops' v{shipped.server.version} is already running locally; stop it first (saip_shipyard_stop), "
            "then run it again"
        )
        # The plan and the status say the same before anyone is asked to approve a run or a delete.
        plan = await y.shipyard.PlanRun(shipyard_pb2.RunRequest(name="ops"))
        status = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="ops"))
        assert (plan.refused, status.delete_refused) == (again, running)
        unset_plan = await y.shipyard.PlanRun(shipyard_pb2.RunRequest(name="keyed"))
        assert unset_plan.refused == unset
        await y.shipyard.Stop(shipyard_pb2.ShippedServerRequest(name="ops"))


async def test_targets_say_why_compose_and_kubernetes_cannot_run_here(nats_server: LocalNats, tmp_path: Any) -> None:
    async with yard(nats_server.url, tmp_path) as y:
        await y.shipyard.Ship(proposal())
        targets = {t.name: t for t in (await y.shipyard.ListTargets(shipyard_pb2.ListTargetsRequest())).targets}
        assert targets["local"].usable
        for name in ("compose", "kubernetes"):
            assert not targets[name].usable and targets[name].reason and targets[name].remedy
        plan = await y.shipyard.PlanRun(shipyard_pb2.RunRequest(name="ops", target="compose"))
        assert plan.command.startswith("docker compose -f ") and plan.command.endswith(" -p saip-shipped-ops up -d")
        assert not plan.usable and plan.reason
        refusal = await refused(y.shipyard.Run(shipyard_pb2.RunRequest(name="ops", target="compose")), FAILED)
        assert "the compose target cannot run here" in refusal


async def test_local_servers_that_ran_run_again_after_a_shipyard_restart_and_a_stopped_one_stays_stopped(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    ops, idle = shipyard_pb2.ShippedServerRequest(name="ops"), shipyard_pb2.ShippedServerRequest(name="idle")
    async with sources(nats_server.url, tmp_path) as found:
        async with shipyard_over(found) as y:
            await y.shipyard.Ship(proposal("ops"))
            await y.shipyard.Ship(proposal("idle"))
            first = await y.shipyard.Run(shipyard_pb2.RunRequest(name="ops"))
            await y.shipyard.Run(shipyard_pb2.RunRequest(name="idle"))
            await y.shipyard.Stop(idle)
            await y.shipyard.Ship(proposal("ops"))  # v2, not approved to run: the restart runs v1 again
            token = (await y.shipyard.GetToken(ops)).token
        async with httpx.AsyncClient() as http:
            with pytest.raises(httpx.TransportError):  # the shipyard's stop stopped its local processes
                await http.get(first.endpoint.removesuffix("/mcp") + "/healthz")

        async with shipyard_over(found) as y:
            # Run again before the restarted shipyard serves: the first status already shows it running.
            again = await y.shipyard.GetStatus(ops)
            stopped = await y.shipyard.GetStatus(idle)
            async with shipped_client(again.endpoint, token, mode="legacy") as client:
                added = await client.call_tool(AUTHORED_TOOL, {"a": 20, "b": 22})
            await y.shipyard.Stop(ops)

    assert (again.state, again.endpoint, again.running_version, again.server.version) == (
        "running",
        first.endpoint,
        1,
        2,
    )
    assert stopped.state == "stopped"
    assert json.loads(added.content[0].text) == {"sum": 42}  # type: ignore[union-attr]


async def test_a_declared_server_ships_once_and_again_only_when_its_declaration_changes(
    nats_server: LocalNats, tmp_path: Any
) -> None:
    declared = {"name": "ops", "description": "Runbook answers.", "tools": [AUTHORED_TOOL], "target": "local"}
    ops = shipyard_pb2.ShippedServerRequest(name="ops")
    seen: list[tuple[int, int, str]] = []  # (version, running version, token) after each start
    async with sources(nats_server.url, tmp_path) as found:
        for declaration in (declared, declared, declared | {"description": "Runbook answers, v2."}):
            async with shipyard_over(found, shipyard_servers=[declaration]) as y:

                async def running(y: Any = y, wanted: str = declaration["description"]) -> Any:
                    found = await declared_status(y, "ops")
                    return found if found and found.state == "running" and found.server.description == wanted else None

                status = await eventually(running, within=60, every=0.2)
                token = (await y.shipyard.GetToken(ops)).token
                seen.append((status.server.version, status.running_version, token))

    assert [(version, ran) for version, ran, _ in seen] == [(1, 1), (1, 1), (2, 2)]
    # The same declaration on the same target keeps its token across restarts, a new version's run too.
    assert len({token for _, _, token in seen}) == 1
