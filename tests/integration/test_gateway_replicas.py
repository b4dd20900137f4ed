"""Two gateway processes on one NATS, as the k8s Deployment runs them: what one replica changes, the other serves.

A token rotated through one replica's REST API turns the old token away on both (the time it takes is recorded as
`token_propagation_ms`, not asserted); a 2026-07-28 approval asked by one replica and answered on the other runs
the call exactly once, and one nobody answers is recorded as TIMEOUT once, by one replica; a 2025-11-25 session
lives only on the replica that created it (why the Service keeps a client on one replica).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NatsClient

from saip.common import names
from saip.common.natsd import LocalNats
from saip.v1 import common_pb2, events_pb2, gateway_pb2
from tests.integration.gateways import ADMIN_HEADERS, GatewayProcess, two_replicas
from tests.waiting import eventually

pytestmark = pytest.mark.integration

MODERN = "2026-07-28"
PROBE = "saip_probe_delete"
APPROVAL = {"approval": {"action": "accept", "content": {"approve": ["run"]}}}


@pytest.fixture
async def replicas(nats_server: LocalNats, tmp_path: Path) -> AsyncIterator[tuple[GatewayProcess, GatewayProcess]]:
    async with two_replicas(tmp_path, nats_server.url) as both:
        yield both


async def rotate(client: httpx.AsyncClient, replica: GatewayProcess) -> str:
    reply = await client.post(f"{replica.url}/api/v1/mcp-token", headers=ADMIN_HEADERS)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["data"]["token"])


async def mcp_status(client: httpx.AsyncClient, replica: GatewayProcess, token: str) -> int:
    """The status /mcp answers a ping sent with this token: 401 when the guard refuses the token."""
    reply = await client.post(
        f"{replica.url}/mcp",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    return reply.status_code


def rpc_result(reply: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a reply sent as JSON or as one server-sent event."""
    assert reply.status_code == 200, reply.text
    if reply.headers["content-type"].startswith("text/event-stream"):
        [data] = [line[len("data:") :] for line in reply.text.splitlines() if line.startswith("data:")]
        message = json.loads(data)
    else:
        message = reply.json()
    assert "result" in message, message
    return message["result"]  # type: ignore[no-any-return]


async def call_modern(client: httpx.AsyncClient, replica: GatewayProcess, token: str, **params: Any) -> dict[str, Any]:
    """One sessionless 2026-07-28 tools/call, as a client that can answer elicitations sends it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    reply = await client.post(
        f"{replica.url}/mcp",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": PROBE,
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": PROBE, **params, "_meta": meta}},
    )
    return rpc_result(reply)


async def management_records(nc: NatsClient, tool: str) -> list[events_pb2.ManagementCall]:
    """Every management call record on the audit stream for this tool (what the audit trail will chain)."""
    js = nc.jetstream()
    info = await js.stream_info(names.AUDIT_STREAM)
    found: list[events_pb2.ManagementCall] = []
    if not info.state.messages:
        return found  # nothing published yet (its first sequence is then 0, which no message has)
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        message = await js.get_msg(names.AUDIT_STREAM, seq)
        if message.subject != names.AUDIT_MANAGEMENT:
            continue
        record = events_pb2.AuditRecord.FromString(message.data or b"")
        if record.management.tool == tool:
            found.append(record.management)
    return found


async def test_a_token_rotated_through_one_replica_is_refused_on_every_replica(
    replicas: tuple[GatewayProcess, GatewayProcess], record_property: Callable[[str, object], None]
) -> None:
    one, two = replicas
    async with httpx.AsyncClient(timeout=5) as client:
        old = await rotate(client, one)
        await eventually(lambda: _accepted(client, two, old))

        started = time.perf_counter()
        new = await rotate(client, one)
        assert await mcp_status(client, one, old) == 401

        async def refused_everywhere() -> bool:
            return all([await mcp_status(client, replica, old) == 401 for replica in replicas])

        await eventually(refused_everywhere, every=0.001)
        elapsed_ms = (time.perf_counter() - started) * 1000
        assert await _accepted(client, two, new)
    record_property("token_propagation_ms", round(elapsed_ms, 1))
    print(f"token rotated on one replica: the old token got 401 on both after {elapsed_ms:.1f} ms")


async def _accepted(client: httpx.AsyncClient, replica: GatewayProcess, token: str) -> bool:
    return await mcp_status(client, replica, token) != 401


async def test_a_2026_07_28_approval_asked_on_one_replica_and_answered_on_the_other_runs_once(
    replicas: tuple[GatewayProcess, GatewayProcess], nats_client: NatsClient
) -> None:
    one, two = replicas
    async with httpx.AsyncClient(timeout=10) as client:
        token = await rotate(client, one)
        await eventually(lambda: _accepted(client, two, token))

        asked = await call_modern(client, one, token, arguments={"name": "cafe"})
        assert asked["resultType"] == "input_required", asked
        question = asked["inputRequests"]["approval"]["params"]["message"]
        assert question.startswith(f"[DESTRUCTIVE] replica-test 1 wants to run {PROBE}")
        answer = {"arguments": {"name": "cafe"}, "requestState": asked["requestState"], "inputResponses": APPROVAL}

        ran = await call_modern(client, two, token, **answer)
        assert ran["isError"] is False, ran
        assert ran["structuredContent"]["message"] == f"{PROBE} ran"

        replayed = await call_modern(client, one, token, **answer)
        assert replayed["isError"] is True
        assert replayed["structuredContent"]["message"] == (
            f"Tool '{PROBE}' was not run: this approval was already used. Call the tool again to ask the user afresh."
        )

    records = await eventually(lambda: _two_records(nats_client))
    outcomes = sorted((record.gateway, record.outcome, record.hitl) for record in records)
    assert outcomes == [
        ("one", common_pb2.OUTCOME_REFUSED, common_pb2.HITL_DECISION_UNSPECIFIED),
        ("two", common_pb2.OUTCOME_OK, common_pb2.HITL_DECISION_APPROVED),
    ]


async def _two_records(nc: NatsClient) -> list[events_pb2.ManagementCall] | None:
    return await _records(nc, 2)


async def test_a_2025_11_25_session_lives_only_on_the_replica_that_created_it(
    replicas: tuple[GatewayProcess, GatewayProcess],
) -> None:
    one, two = replicas
    async with httpx.AsyncClient(timeout=10) as client:
        token = await rotate(client, one)
        await eventually(lambda: _accepted(client, two, token))
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "replica-test", "version": "1"},
            },
        }
        created = await client.post(f"{one.url}/mcp", headers=headers, json=initialize)
        assert created.status_code == 200, created.text
        session = {**headers, "Mcp-Session-Id": created.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await client.post(f"{one.url}/mcp", headers=session, json=ping)).status_code == 200
        assert (await client.post(f"{two.url}/mcp", headers=session, json=ping)).status_code == 404


async def test_a_2026_07_28_question_nobody_answers_is_recorded_as_timeout_once_by_one_replica(
    nats_server: LocalNats, tmp_path: Path, nats_client: NatsClient
) -> None:
    """Each replica sweeps the questions past their wait; one wins each, and a late answer adds no record."""
    async with two_replicas(tmp_path, nats_server.url, SAIP_HITL_APPROVAL_WAIT_SECONDS="1") as (one, two):
        async with httpx.AsyncClient(timeout=10) as client:
            token = await rotate(client, one)
            await eventually(lambda: _accepted(client, two, token))
            asked = await call_modern(client, one, token, arguments={"name": "cafe"})
            assert asked["resultType"] == "input_required", asked

            [record] = await eventually(lambda: _records(nats_client, 1), within=15)
            claimed = await _pending(nats_client)
            assert claimed.timed_out and claimed.swept_by in ("one", "two")

            late = {"arguments": {"name": "cafe"}, "requestState": asked["requestState"], "inputResponses": APPROVAL}
            expired = await call_modern(client, two, token, **late)
        assert expired["isError"] is True
        assert expired["structuredContent"]["message"] == (
            f"Tool '{PROBE}' was not run: no approval within 1 s. Do not retry it for this request; ask the user to "
            "run it from the app if it is still needed."
        )
    assert (record.outcome, record.hitl) == (common_pb2.OUTCOME_TIMEOUT, common_pb2.HITL_DECISION_TIMEOUT)
    assert record.gateway == "one" and record.approval_seconds == pytest.approx(1.0)
    # The late answer was refused without a record of its own; neither replica recorded the question again.
    assert len(await management_records(nats_client, PROBE)) == 1


async def _records(nc: NatsClient, count: int) -> list[events_pb2.ManagementCall] | None:
    records = await management_records(nc, PROBE)
    return records if len(records) == count else None


async def _pending(nc: NatsClient) -> gateway_pb2.PendingQuestion:
    kv = await nc.jetstream().key_value(names.QUESTIONS_BUCKET)
    [key] = await kv.keys()
    entry = await kv.get(key)
    return gateway_pb2.PendingQuestion.FromString(entry.value or b"")
