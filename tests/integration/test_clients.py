"""A credential per client: named static tokens beside the shared one and OAuth grants, each with its grant; the
person's list of them with their use; and the management surface on while any credential is, with the seed's reason
while none is. A client granted the published tools only sees no saip_* tool, resource or prompt, and its
management call is refused by the gate, on the trail under its credential; nor does it see the guides as skills."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from click.testing import CliRunner, Result
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client as NatsClient

from saip.cli.group import cli
from saip.common.natsd import LocalNats
from saip.gateway.errors import TokenManagedByConfiguration
from saip.gateway.server import Gateway
from tests.integration.gateways import ADMIN, ADMIN_HEADERS, replica_settings
from tests.integration.oauth_support import (
    MANAGEMENT,
    PUBLISHED,
    Person,
    SdkClient,
    listed_clients,
    oauth_gateway,
    records_of,
)
from tests.results import text
from tests.skills import listed
from tests.waiting import eventually

pytestmark = pytest.mark.integration

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]
NOT_GRANTED = "is granted the published tools only"


@asynccontextmanager
async def with_token(url: str, token: str, mode: str, name: str = "header-client") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(
            streamable_http_client(f"{url}/mcp", http_client=http),
            mode=mode,  # type: ignore[arg-type]
            client_info=types.Implementation(name=name, version="7"),
        ) as client,
    ):
        yield client


async def add(http: httpx.AsyncClient, url: str, name: str, scope: str) -> dict[str, Any]:
    reply = await http.post(f"{url}/api/v1/clients", headers=ADMIN_HEADERS, json={"name": name, "scope": scope})
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["data"])


async def a_session_is_its_credential_s(http: httpx.AsyncClient, url: str, owner: str, other: str) -> None:
    """A 2025-11-25 session opened under one credential: another credential presenting its id finds none."""
    accept = {"Accept": "application/json, text/event-stream"}
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    opened = await http.post(f"{url}/mcp", headers={**accept, "Authorization": f"Bearer {owner}"}, json=hello)
    assert opened.status_code == 200, opened.text
    session = {**accept, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    mine = await http.post(f"{url}/mcp", headers={**session, "Authorization": f"Bearer {owner}"}, json=ping)
    assert mine.status_code == 200
    borrowed = await http.post(f"{url}/mcp", headers={**session, "Authorization": f"Bearer {other}"}, json=ping)
    assert borrowed.status_code == 404


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_granted_the_published_tools_only_sees_and_runs_no_management(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path, mode: str
) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served:
        client = SdkClient(served, Person(served.url, grant="tools"), name="reader")
        async with client.connected(mode) as session:
            assert [tool.name for tool in (await session.list_tools()).tools] == [PUBLISHED]
            assert (await session.list_resources()).resources == []
            assert (await session.list_resource_templates()).resource_templates == []
            assert (await session.list_prompts()).prompts == []
            assert (await listed(session)).skills == []
            refused = await session.call_tool(MANAGEMENT, {"name": "old"})
            assert refused.is_error
            said = json.loads(text(refused))["message"]
            assert NOT_GRANTED in said and "saip clients add NAME --scope manage" in said
            assert "echo: still" in text(await session.call_tool(PUBLISHED, {"text": "still"}))
        assert served.gateway.registry.tool(MANAGEMENT) is not None  # the surface is on, for the others
        [grant] = [found for found in await listed_clients(served.url) if found["kind"] == "oauth"]

        async def refused_on_the_trail() -> bool:
            return any(
                record.management.tool == MANAGEMENT
                and record.management.caller.credential.id == grant["id"]
                and record.management.outcome == 3  # REFUSED
                for record in await records_of(nats_client)
                if record.HasField("management")
            )

        await eventually(refused_on_the_trail)


async def test_named_tokens_have_their_grant_their_use_and_their_revocation(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with oauth_gateway(tmp_path, nats_server.url, oauth_enabled=False) as served:
        url = served.url
        async with httpx.AsyncClient(timeout=10) as http:
            # No credential at all: /mcp is open for the published tools, and the surface off with the seed's reason.
            status = (await http.get(f"{url}/api/v1/management/status", headers=ADMIN_HEADERS)).json()["data"]
            assert (status["surface"], status["reason"]) == (False, "no bearer token on the built-in server")
            assert status["credentials"] == {"shared": False, "named": 0, "oauth": False, "dynamicRegistration": False}

            manager = await add(http, url, "ci-bot", "manage")
            reader = await add(http, url, "dashboard", "tools")
            duplicate = await http.post(
                f"{url}/api/v1/clients", headers=ADMIN_HEADERS, json={"name": "ci-bot", "scope": "tools"}
            )
            assert duplicate.status_code == 409 and manager["client"]["id"] in duplicate.json()["message"]
            await eventually(lambda: served.gateway.registrar.status.surface)

            async with with_token(url, manager["token"], "auto") as session:
                names = {tool.name for tool in (await session.list_tools()).tools}
                assert {PUBLISHED, MANAGEMENT} <= names
                assert (await session.list_prompts()).prompts
                assert (await listed(session)).skills  # the guides, as Agent Skills
            async with with_token(url, reader["token"], "legacy") as session:
                assert [tool.name for tool in (await session.list_tools()).tools] == [PUBLISHED]
                await session.call_tool(PUBLISHED, {"text": "counted"})
            anonymous = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert anonymous.status_code == 401
            await a_session_is_its_credential_s(http, url, reader["token"], manager["token"])

            async def counted() -> dict[str, Any] | None:
                listed = {found["name"]: found for found in await listed_clients(url)}
                found = listed.get("dashboard")
                return found if found is not None and found["callsLastHour"] == 1 else None

            dashboard = await eventually(counted, within=20)
            assert (dashboard["kind"], dashboard["grant"], dashboard["questionsLastHour"]) == ("named", "tools", 0)
            assert dashboard["firstSeen"] and dashboard["lastSeen"]
            everything = json.dumps(await listed_clients(url))
            assert manager["token"] not in everything and reader["token"] not in everything

            revoked = await http.delete(f"{url}/api/v1/clients/{manager['client']['id']}", headers=ADMIN_HEADERS)
            assert revoked.status_code == 200
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            refused = await http.post(f"{url}/mcp", headers={"Authorization": f"Bearer {manager['token']}"}, json=ping)
            assert refused.status_code == 401
            # The last named token revoked: no credential is on, and the surface goes with it.
            revoked = await http.delete(f"{url}/api/v1/clients/{reader['client']['id']}", headers=ADMIN_HEADERS)
            assert revoked.status_code == 200
            await eventually(lambda: not served.gateway.registrar.status.surface)
            assert served.gateway.registrar.status.reason == "no bearer token on the built-in server"
            missing = await http.delete(f"{url}/api/v1/clients/nosuch", headers=ADMIN_HEADERS)
            assert missing.status_code == 404


async def test_the_shared_token_is_listed_as_such_and_oauth_alone_turns_the_surface_on(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    settings = replica_settings(tmp_path, nats_server.url, "one", mcp_server_auth_token="c" * 40)
    shared = Gateway(settings)
    oauth = Gateway(replica_settings(tmp_path, nats_server.url, "two", oauth_enabled=True))
    async with shared.running(), oauth.running():
        listed = (await shared.access.clients.listing()).data["clients"]
        assert [(found["id"], found["kind"], found["grant"], found["source"]) for found in listed] == [
            ("shared", "shared", "manage", "configuration")
        ]
        assert oauth.registrar.status.surface and not oauth.tokens.is_set
        assert (await oauth.operations.management()).data["credentials"]["oauth"] is True
        with pytest.raises(TokenManagedByConfiguration):
            await shared.access.clients.revoke("shared")


async def test_the_command_line_makes_lists_and_revokes_a_named_token(nats_server: LocalNats, tmp_path: Path) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served:

        def saip(*arguments: str) -> Result:
            runner = CliRunner()
            return runner.invoke(cli, ["--url", served.url, "--admin-token", ADMIN, *arguments])

        made = await anyio.to_thread.run_sync(saip, "clients", "add", "cursor on the laptop", "--scope", "manage")
        assert made.exit_code == 0, made.output
        token = made.output.strip()
        assert len(token) >= 40 and "\n" not in token  # the token alone on stdout, shown this once
        listed = await anyio.to_thread.run_sync(saip, "clients", "list")
        assert listed.exit_code == 0, listed.output
        [row] = [line for line in listed.output.splitlines() if "cursor on the laptop" in line]
        credential_id = row.split()[0]
        assert row.split()[1:3] == ["named", "manage"] and token not in listed.output
        shown = await anyio.to_thread.run_sync(saip, "status")
        assert "Credentials" in shown.output and "1 named token" in shown.output and "OAuth" in shown.output
        connect = await anyio.to_thread.run_sync(saip, "clients", "connect")
        assert f"claude mcp add --transport http saip {served.mcp}" in connect.output
        revoked = await anyio.to_thread.run_sync(saip, "clients", "revoke", credential_id)
        assert revoked.exit_code == 0 and "every replica refuses it now" in revoked.output
        again = await anyio.to_thread.run_sync(saip, "clients", "revoke", credential_id)
        assert again.exit_code == 1 and "saip clients list shows their ids" in again.output
