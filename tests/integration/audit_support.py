"""Shared by the audit integration tests (it holds no tests itself): records as publishers send them, the
audit service in-process, its gRPC client, the ledger read back from the stream, and bounded waiting.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import TypeVar

import anyio
import grpc
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import Header
from prometheus_client import CollectorRegistry

from saip.audit import records
from saip.audit.chain import LedgerMessage, decode_entry
from saip.audit.clients.ledger import JetStreamLedger
from saip.audit.clients.store import ensure_audit_stream
from saip.audit.config import AuditSettings
from saip.audit.server import Running, lifespan
from saip.common.natsd import LocalNats
from saip.v1 import audit_pb2, audit_pb2_grpc, events_pb2
from tests.unit.audit import samples
from tests.waiting import eventually

T = TypeVar("T")


# Records as a live publisher sends them: stamped with the current time.
management_call = functools.partial(samples.management_call, at=None)
tool_call = functools.partial(samples.tool_call, at=None)
risk_event = functools.partial(samples.risk_event, at=None)


async def publish(js: JetStreamContext, record: events_pb2.AuditRecord, *, within: float = 15.0) -> None:
    """Publish as a gateway does: on the kind's subject with Nats-Msg-Id = the record id, and, while NATS is
    restarting, again with the same id until the stream acknowledges it (which is why it is stored once).
    """
    headers = {Header.MSG_ID.value: records.record_id(record)}
    with anyio.fail_after(within):
        while True:
            try:
                await js.publish(records.subject_of(record), record.SerializeToString(), timeout=1.0, headers=headers)
                return
            except (nats.errors.Error, nats.js.errors.Error):
                await anyio.sleep(0.05)  # NATS is restarting: the retry is the publisher's, bounded above


def settings(nats_url: str, *, capacity: int = 500) -> AuditSettings:
    return AuditSettings.load(nats_url=nats_url, audit_port=0, audit_metrics_port=0, management_audit_capacity=capacity)


@asynccontextmanager
async def running_audit(nats_url: str, *, capacity: int = 500, ack_wait: float = 1.0) -> AsyncIterator[Running]:
    """The audit service in this process on free ports, with its own metrics registry."""
    async with lifespan(
        settings(nats_url, capacity=capacity), registry=CollectorRegistry(), ack_wait=ack_wait
    ) as audit:
        yield audit


@asynccontextmanager
async def audit_client(port: int) -> AsyncIterator[audit_pb2_grpc.AuditServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield audit_pb2_grpc.AuditServiceStub(channel)  # type: ignore[no-untyped-call]


async def wait_chained(stub: audit_pb2_grpc.AuditServiceStub, count: int, *, within: float = 10.0) -> int:
    """Wait until the service reports `count` chained entries; returns its chain length."""

    async def length() -> int | None:
        overview = await stub.GetOverview(audit_pb2.GetOverviewRequest(), timeout=5)
        return overview.chain_length if overview.chain_length >= count else None

    return await eventually(length, within=within)


async def chain_calls(js: JetStreamContext, stub: audit_pb2_grpc.AuditServiceStub, count: int) -> None:
    """Publish management calls m-1..m-<count> and wait until the service has chained them."""
    for n in range(1, count + 1):
        await publish(js, management_call(f"m-{n}"))
    await wait_chained(stub, count)


async def ready_ledger(nats: LocalNats, nc: NatsClient) -> JetStreamLedger:
    """The ledger on the audit stream, created if need be, with no audit service running."""
    await ensure_audit_stream(nc.jetstream(timeout=2), settings(nats.url))
    return JetStreamLedger(nc)


async def ledger_messages(nc: NatsClient) -> list[LedgerMessage]:
    """Every message the stream holds on the ledger subject, oldest first."""
    ledger = JetStreamLedger(nc)
    first, last = await ledger.bounds()
    async with aclosing(ledger.read(first, last)) as messages:
        return [message async for message in messages]


async def ledger_entries(nc: NatsClient) -> list[tuple[int, events_pb2.LedgerEntry]]:
    """Every ledger entry the stream holds, with its stream sequence, oldest first."""
    found = []
    for message in await ledger_messages(nc):
        entry = decode_entry(message.data)
        assert entry is not None, f"ledger message {message.seq} is not an entry"
        found.append((message.seq, entry))
    return found


def chained_record(entry: events_pb2.LedgerEntry) -> events_pb2.AuditRecord:
    record = events_pb2.AuditRecord()
    record.ParseFromString(entry.record)
    return record
