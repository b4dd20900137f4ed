"""While NATS is away the gateway spools audit records to disk; when it returns they reach the stream, in order."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy

from saip.common import bus, names
from saip.common.natsd import LocalNats
from saip.gateway.server import Gateway
from saip.v1 import common_pb2, events_pb2
from tests.integration.gateways import replica_settings
from tests.waiting import eventually

pytestmark = pytest.mark.integration


def call(n: int) -> events_pb2.ManagementCall:
    return events_pb2.ManagementCall(
        id=str(uuid.uuid4()),
        tool=f"saip_monitor_{n}",
        outcome=common_pb2.OUTCOME_OK,
        level=common_pb2.APPROVAL_LEVEL_READ,
    )


async def stream_ids(url: str, count: int) -> list[str]:
    nc = await bus.connect(url, "reader", within=10)
    try:
        js = nc.jetstream()
        sub = await js.subscribe(
            names.AUDIT_MANAGEMENT,
            ordered_consumer=True,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
        )
        ids = []
        with anyio.fail_after(10):
            while len(ids) < count:
                message = await sub.next_msg(timeout=5)
                ids.append(events_pb2.AuditRecord.FromString(message.data).management.id)
        await sub.unsubscribe()
        return ids
    finally:
        await nc.close()


async def test_records_written_while_nats_is_down_arrive_in_order_when_it_returns(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    gateway = Gateway(replica_settings(tmp_path, nats_server.url, "one"))
    sent: list[str] = []
    async with gateway.running():
        for n in range(3):
            record = call(n)
            assert await gateway.publisher.management_call(record) is None
            sent.append(record.id)
        nats_server.stop()
        await eventually(lambda: not gateway.nc.is_connected)
        for n in range(3, 8):
            record = call(n)
            assert await gateway.publisher.management_call(record) is None  # durable on disk, no warning
            sent.append(record.id)
        spool = tmp_path / "spool" / "one"
        assert len(list(spool.glob("*.rec"))) == 5
        nats_server.start()
        await eventually(lambda: not list(spool.glob("*.rec")), within=30)
        # Later records queue behind nothing once the spool is empty: they are published directly again.
        record = call(8)
        await gateway.publisher.management_call(record)
        sent.append(record.id)
    assert await stream_ids(nats_server.url, len(sent)) == sent
