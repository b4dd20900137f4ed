"""The shipyard area through a real gateway and the real tools, knowledge and shipyard services on a real NATS: the
tools and their levels, the run's approval quoting the exact command that runs, a run that never hands the AI the
token, the status resource, the guide and the prompt; and the person's export of a server's compose and Kubernetes
files (REST, its archive and `saip shipyard export`), which validate offline with the tools that apply them."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import kubernetes_validate
import mcp_types as types
import pytest
import yaml
from click.testing import CliRunner
from mcp import Client

from saip.cli.group import cli
from saip.common.natsd import LocalNats, free_port
from saip.gateway.areas.shipyard.contribution import GUIDE_URI, STATUS_URI, TOKEN_HIDDEN
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from saip.v1 import shipyard_pb2
from tests.contract.deployment import COMPOSE_BINARY, kubectl
from tests.integration.answers import Person, envelope
from tests.integration.gateways import ADMIN, ADMIN_HEADERS, replica_settings
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
        running = await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name="ops"))
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
    assert f"`{running.command}`" in run_question  # the very argv that runs: host, port, stop with stdin
    assert "--stop-with-stdin" in running.command


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


async def test_the_person_exports_the_compose_and_kubernetes_files_of_a_server_and_they_validate_offline(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with yard(nats_server.url, tmp_path / "yard") as y:
        await y.shipyard.Ship(shipyard_pb2.BundleProposal(name="ops", description="Adds.", tools=[AUTHORED_TOOL]))
        settings = replica_settings(
            tmp_path, nats_server.url, "one", gateway_port=free_port(), shipyard_addr=f"127.0.0.1:{y.running.port}"
        )
        url = f"http://127.0.0.1:{settings.gateway_port}"
        async with over_http(Gateway(settings)), httpx.AsyncClient(base_url=url, headers=ADMIN_HEADERS) as api:
            compose = await saip(url, "shipyard", "export", "ops", "--target", "compose", "--port", "18400", "-o",
                                 str(tmp_path / "compose"))  # fmt: skip
            kubernetes = await saip(url, "shipyard", "export", "ops", "--target", "kubernetes", "-o",
                                    str(tmp_path / "kubernetes"))  # fmt: skip
            archive = await api.get("/api/v1/shipyard/servers/ops/export/archive", params={"target": "kubernetes"})
            again = await saip(url, "shipyard", "export", "ops", "--target", "compose", "-o", str(tmp_path / "compose"))
        runs = list((tmp_path / "yard" / "shipyard").rglob("token.env"))

    assert compose["command"] == "docker compose -f compose.yaml -p saip-shipped-ops up -d"
    assert kubernetes["command"] == "kubectl apply -k ."
    assert "is not empty" in again and "--into" in again  # nothing is written over an earlier export
    assert runs == []  # nothing ran: no run's files were written
    folder = tmp_path / "compose"
    token = (folder / "token.env").read_text().strip().split("=", 1)[1]
    assert len(token) >= 32 and (folder / "token.env").stat().st_mode & 0o077 == 0
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(COMPOSE_BINARY), "-f", str(folder / "compose.yaml"), "config", "--format", "json"], check=False
        )
    assert done.returncode == 0, done.stderr
    service = json.loads(done.stdout)["services"]["shipped"]
    assert service["environment"]["SAIP_SHIPPED_TOKEN"] == token and service["ports"][0]["published"] == "18400"
    assert (folder / "bundle" / "saip-bundle.json").is_file()

    with anyio.fail_after(60):
        rendered = await anyio.run_process([kubectl(), "kustomize", str(tmp_path / "kubernetes")], check=False)
    assert rendered.returncode == 0, rendered.stderr
    documents = [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert sorted(doc["kind"] for doc in documents) == ["ConfigMap", "Deployment", "Secret", "Service"]
    for doc in documents:
        kubernetes_validate.validate(doc, "1.33", strict=True)

    # The archive is the same folder in one file, each file with its mode.
    assert archive.status_code == 200 and archive.headers["content-type"] == "application/gzip"
    assert 'filename="saip-shipped-ops-kubernetes.tar.gz"' in archive.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(archive.content)) as tar:
        members = {member.name: member for member in tar.getmembers()}
    written = {
        f"saip-shipped-ops-kubernetes/{path.relative_to(tmp_path / 'kubernetes').as_posix()}"
        for path in (tmp_path / "kubernetes").rglob("*")
        if path.is_file()
    }
    assert set(members) == written and members["saip-shipped-ops-kubernetes/token.env"].mode == 0o600


async def saip(url: str, *arguments: str) -> Any:
    """`saip --json ...` against the gateway (in a thread: the gateway answers on this event loop): the envelope's
    data, or the refusal's output."""
    command = ["--url", url, "--admin-token", ADMIN, *arguments, "--json"]
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command))
    return json.loads(result.output)["data"] if result.exit_code == 0 else result.output
