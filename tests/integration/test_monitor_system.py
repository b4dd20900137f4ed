"""saip_monitor_system and saip_monitor_logs_tail through a real gateway on a real NATS, with a process's telemetry
(saip.common.telemetry: its log lines and its heartbeat) shipped over a connection of its own, as every service's
lifespan ships it: the lines filtered by service, level and text and masked, the heartbeat and the durable
consumers' lag in the system view, and the vector store named when no knowledge service is configured."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from saip.common import bus, names, telemetry
from saip.common.logs import JsonFormatter
from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from tests.integration.audit_support import running_audit
from tests.integration.gateways import replica_settings
from tests.results import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.integration

CLIENT = types.Implementation(name="monitor-client", version="2.2")
TOKEN = "t" * 24


@asynccontextmanager
async def shipping(nats_url: str, service: str) -> AsyncIterator[logging.Logger]:
    """A logger whose lines a shipper of `service` sends over its own NATS connection, with its heartbeat beating."""
    shipper = telemetry.LogShipper()
    shipper.service = service
    shipper.setFormatter(JsonFormatter(service))
    logger = logging.getLogger(f"tests.telemetry.{service}")
    logger.addHandler(shipper)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    nc = await bus.connect(nats_url, f"test {service}", within=10)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(shipper.ship, nc)
            group.start_soon(telemetry.beat, nc, service)
            yield logger
            group.cancel_scope.cancel()
    finally:
        logger.removeHandler(shipper)
        await nc.close()


async def test_the_logs_of_a_service_are_tailed_filtered_and_masked(nats_server: LocalNats, tmp_path: Path) -> None:
    settings = replica_settings(tmp_path, nats_server.url, "one", mcp_server_auth_token=TOKEN)
    gateway = Gateway(settings)
    async with (
        gateway.running(),
        shipping(nats_server.url, "tools") as tools,
        shipping(nats_server.url, "knowledge") as knowledge,
    ):
        tools.debug("warming the isolates")
        tools.info("tool published", extra={"tool": "word-count"})
        tools.warning("sandbox blocked a call", extra={"url": "https://api.example.com/?token=abcd1234secret"})
        knowledge.error("ingest failed", extra={"document": "runbook"})
        async with Client(gateway.mcp, mode="legacy", client_info=CLIENT) as client:

            async def four() -> dict[str, Any] | None:
                data = envelope(await client.call_tool("saip_monitor_logs_tail", {"level": "DEBUG"}))["data"]
                return data if data["count"] == 4 else None

            every = await eventually(four)
            warnings = envelope(
                await client.call_tool("saip_monitor_logs_tail", {"service": "tools", "level": "WARNING"})
            )
            published = envelope(await client.call_tool("saip_monitor_logs_tail", {"text": "WORD-COUNT"}))
            unknown = await client.call_tool("saip_monitor_logs_tail", {"service": "toolz"})
            system = envelope(await client.call_tool("saip_monitor_system", {}))

    # Each service's lines in the order it wrote them; two services' lines in the order NATS received them.
    assert [line["msg"] for line in every["lines"] if line["service"] == "tools"] == [
        "warming the isolates",
        "tool published",
        "sandbox blocked a call",
    ]
    assert [line["msg"] for line in every["lines"] if line["service"] == "knowledge"] == ["ingest failed"]
    [warning] = warnings["data"]["lines"]
    assert (warning["service"], warning["level"]) == ("tools", "WARNING")
    assert "abcd1234secret" not in json.dumps(warning) and "token=***" in warning["url"]
    assert warnings["message"] == "1 log line of tools at WARNING or above, oldest first."
    assert [line["tool"] for line in published["data"]["lines"]] == ["word-count"]
    assert unknown.is_error and isinstance(block := unknown.content[0], types.TextContent)
    assert json.loads(block.text)["message"] == (
        "No log lines of 'toolz': no service of that name writes to the log stream. The services that do: "
        "knowledge, tools; leave the service out for all of them."
    )

    data = system["data"]
    services = {entry["service"]: entry for entry in data["services"]}
    [beat] = services["tools"]["replicas"]
    assert beat["version"] != "" and beat["memoryBytes"] > 0 and beat["openConnections"] >= 1
    assert services["audit"]["health"] == "unreachable"  # nothing listens on the audit address in this test
    streams = {stream["name"] for stream in data["nats"]["streams"]}
    assert {"SAIP_AUDIT", "SAIP_LOGS"} <= streams
    assert data["nats"]["health"] == "ok" and data["nats"]["jetstream"]["streams"] >= 2
    assert data["vectorStore"] == {"status": "not configured", "detail": "knowledge.addr is unset"}


async def test_the_audit_collectors_lag_is_in_the_system_view(nats_server: LocalNats, tmp_path: Path) -> None:
    async with running_audit(nats_server.url) as audit:
        settings = replica_settings(tmp_path, nats_server.url, "one", mcp_server_auth_token=TOKEN)
        settings.audit_addr = f"127.0.0.1:{audit.port}"
        gateway = Gateway(settings)
        async with gateway.running(), Client(gateway.mcp, mode="auto", client_info=CLIENT) as client:
            system = envelope(await client.call_tool("saip_monitor_system", {}))

    consumers = {(c["stream"], c["name"]): c for c in system["data"]["nats"]["consumers"]}
    collector = consumers[("SAIP_AUDIT", "audit-collector")]
    assert collector["pending"] >= 0 and collector["ackPending"] >= 0
    services = {entry["service"]: entry["health"] for entry in system["data"]["services"]}
    assert services["audit"] == "ok" and services["gateway"] == "ok"
    assert "every service healthy" in system["message"]


async def test_lines_written_in_a_row_are_one_message_and_a_producers_single_lines_are_read_too(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    settings = replica_settings(tmp_path, nats_server.url, "one", mcp_server_auth_token=TOKEN)
    gateway = Gateway(settings)
    written = telemetry.MESSAGE_LINES + 44
    async with gateway.running(), shipping(nats_server.url, "audit") as audit:
        for n in range(written):  # in one turn of the event loop, as the collector logs a batch of records
            audit.info("mgmt.call tool=saip_x n=%d", n, extra={"index": n})
        # A producer of its own that publishes each line as one message, as every process did before batches.
        nc = await bus.connect(nats_server.url, "test single lines", within=10)
        try:
            for n in range(2):
                line = {"ts": "2026-12-01T00:00:00.000+00:00", "level": "INFO", "service": "tools", "msg": f"alone {n}"}
                await nc.publish(names.LOGS_PREFIX + "tools", json.dumps(line).encode())
            await nc.flush()
        finally:
            await nc.close()
        async with Client(gateway.mcp, mode="legacy", client_info=CLIENT) as client:

            async def every_audit_line() -> dict[str, Any] | None:
                tail = {"service": "audit", "limit": 500}
                data = envelope(await client.call_tool("saip_monitor_logs_tail", tail))["data"]
                return data if data["count"] == written else None

            lines = (await eventually(every_audit_line))["lines"]
            single = envelope(await client.call_tool("saip_monitor_logs_tail", {"service": "tools"}))["data"]
            last_two = envelope(await client.call_tool("saip_monitor_logs_tail", {"service": "audit", "limit": 2}))
            # A line from another thread wakes the shipper through its loop.
            await anyio.to_thread.run_sync(audit.warning, "from a worker thread")

            async def the_threads_line() -> list[dict[str, Any]]:
                tail = {"service": "audit", "text": "worker thread", "level": "WARNING"}
                return list(envelope(await client.call_tool("saip_monitor_logs_tail", tail))["data"]["lines"])

            [threads] = await eventually(the_threads_line)
        nc = await bus.connect(nats_server.url, "test stream state", within=10)
        try:
            info = await nc.jetstream().stream_info(names.LOGS_STREAM, subjects_filter="saip.logs.>")
        finally:
            await nc.close()

    assert [line["index"] for line in lines] == list(range(written))
    assert lines[-1]["msg"] == f"mgmt.call tool=saip_x n={written - 1}"
    assert [line["index"] for line in last_two["data"]["lines"]] == [written - 2, written - 1]
    assert [line["msg"] for line in single["lines"]] == ["alone 0", "alone 1"]
    # The audit lines of one turn went in as few messages as the bounds allow, the thread's line in one of its own;
    # the other producer's lines as one message each.
    assert threads["msg"] == "from a worker thread"
    assert info.state.subjects == {"saip.logs.audit": 3, "saip.logs.tools": 2}
