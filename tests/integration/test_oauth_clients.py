"""Real OAuth clients nobody here wrote, against saip as the authorization server of its own /mcp: the MCP SDK's
OAuth client provider (discovery from the 401, Dynamic Client Registration, PKCE, the person's consent, refresh)
in both protocol eras, each calling a published tool and, with the management grant, a management tool with its
approval, every call on the audit trail under its credential."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client as FastMcpClient
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from saip.common import names, tracing
from saip.common.natsd import LocalNats
from tests.integration.oauth_support import (
    MANAGEMENT,
    PUBLISHED,
    FastMcpOAuth,
    Person,
    SdkClient,
    listed_clients,
    oauth_gateway,
    records_of,
)
from tests.results import envelope, text
from tests.waiting import eventually

pytestmark = pytest.mark.integration

ERAS = [pytest.param("legacy", id="2025-11-25"), pytest.param("auto", id="2026-07-28")]


@pytest.mark.parametrize("mode", ERAS)
async def test_the_sdk_client_registers_signs_in_and_calls_under_its_own_credential(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path, mode: str
) -> None:
    spans: list[list[Any]] = []

    async def kept(message: Msg) -> None:
        spans.extend(tracing.decode(message.data)[1])

    await nats_client.subscribe(f"{names.TRACES_PREFIX}gateway", cb=kept)
    async with oauth_gateway(tmp_path, nats_server.url) as served:
        person = Person(served.url, grant="manage")
        client = SdkClient(served, person)
        questions: list[str] = []
        async with client.connected(mode, questions) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert {PUBLISHED, MANAGEMENT} <= tools
            echoed = await session.call_tool(PUBLISHED, {"text": "hello"})
            assert not echoed.is_error and "echo: hello" in text(echoed)
            deleted = await session.call_tool(MANAGEMENT, {"name": "old"})
            assert envelope(deleted)["ok"] is True, text(deleted)
        # The person saw who asked and what it asked for, and one question came for the management call.
        [shown] = person.shown
        assert shown["client"]["name"] == "sdk-oauth-client"
        assert shown["client"]["host"] == "registered dynamically"
        assert shown["redirectUri"] == "http://127.0.0.1:33418/callback"
        assert [grant["grant"] for grant in shown["grants"]] == ["tools", "manage"]
        assert len(questions) == 1 and questions[0].startswith("[DESTRUCTIVE] sdk-oauth-client 1.0 wants to run")
        # The client is listed under its own credential, and both calls are on the trail under it.
        [listed] = [found for found in await listed_clients(served.url) if found["kind"] == "oauth"]
        assert (listed["name"], listed["grant"]) == ("sdk-oauth-client", "manage")

        async def on_the_trail() -> list[str]:
            calls = [
                record.management if record.HasField("management") else record.tool_call
                for record in await records_of(nats_client)
                if record.WhichOneof("record") in ("management", "tool_call")
            ]
            mine = [call for call in calls if call.caller.credential.id == listed["id"]]
            return sorted(call.tool for call in mine) if len(mine) == 2 else []

        assert await eventually(on_the_trail) == sorted([PUBLISHED, MANAGEMENT])

        def traced() -> list[dict[str, Any]]:
            # A request's root span names the credential, then the client as it names itself.
            return [row[9] for row in spans if row[3] == "mcp tools/call" and row[9].get("saip.credential")]

        [*_, attributes] = await eventually(traced, within=20)
        assert (attributes["saip.credential"], attributes["saip.credential.kind"]) == (listed["id"], "oauth")
        assert attributes["saip.client"] == "sdk-oauth-client 1.0"


async def test_an_expired_access_token_is_refreshed_and_the_old_refresh_token_is_spent(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served:
        client = SdkClient(served, Person(served.url, grant="tools"))
        async with client.connected("auto") as session:
            await session.call_tool(PUBLISHED, {"text": "first"})
            first = client.storage.tokens
            assert first is not None and first.refresh_token
            # The client takes its token for expired (as it will be in an hour), and refreshes before the next call.
            client.provider.context.token_expiry_time = time.time() - 1
            again = await session.call_tool(PUBLISHED, {"text": "second"})
            assert not again.is_error
            second = client.storage.tokens
            assert second is not None and second.refresh_token not in (None, first.refresh_token)
            assert second.access_token != first.access_token


# The client's tokens live as long as the test: fastmcp warns that memory is not a store for a real client's.
@pytest.mark.filterwarnings("ignore:Using in-memory token storage")
@pytest.mark.parametrize("mode", ERAS)
async def test_fastmcp_s_oauth_client_signs_in_and_calls_under_its_own_credential(
    nats_server: LocalNats, nats_client: NatsClient, tmp_path: Path, mode: str
) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served:
        person = Person(served.url, grant="manage")
        questions: list[str] = []

        async def approve(message: str, response_type: object, params: object, context: object) -> dict[str, object]:
            questions.append(message)
            return {"approve": ["run"]}

        auth = FastMcpOAuth(person, client_name="fastmcp-oauth-client", callback_host="127.0.0.1")
        client = FastMcpClient(
            served.mcp,
            auth=auth,
            mode=mode,  # type: ignore[arg-type]
            elicitation_handler=approve,
            client_info=types.Implementation(name="fastmcp-oauth-client", version="4"),
        )
        async with client:
            tools = {tool.name for tool in await client.list_tools()}
            assert {PUBLISHED, MANAGEMENT} <= tools
            echoed = await client.call_tool(PUBLISHED, {"text": "hi"})
            assert "echo: hi" in text(echoed)
            deleted = await client.call_tool(MANAGEMENT, {"name": "old"})
            assert envelope(deleted)["ok"] is True
        assert person.shown[0]["client"]["name"] == "fastmcp-oauth-client"
        assert len(questions) == 1
        [listed] = [found for found in await listed_clients(served.url) if found["kind"] == "oauth"]

        async def both_on_the_trail() -> bool:
            tools = [
                (record.management if record.HasField("management") else record.tool_call).tool
                for record in await records_of(nats_client)
                if record.WhichOneof("record") in ("management", "tool_call")
                and (record.management if record.HasField("management") else record.tool_call).caller.credential.id
                == listed["id"]
            ]
            return sorted(tools) == sorted([PUBLISHED, MANAGEMENT])

        await eventually(both_on_the_trail)
