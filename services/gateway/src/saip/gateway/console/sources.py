"""What feeds the console's live feed on each replica: the key-value buckets the services write, the audit chain as
the collector appends it (saip.audit.ledger), and the upstream connections' states as the tools replicas tell them
(saip.tools.connection.changed)."""

from __future__ import annotations

import anyio
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError
from nats.js.kv import KeyValue

from saip.common import bus, names
from saip.common.watch import WatchEnded
from saip.gateway.areas.mcp.views import STATES
from saip.gateway.console.feed import Feed, changes
from saip.v1 import events_pb2, upstream_pb2

# How often a bucket no service has made yet is looked for (its service may start after the gateway).
LOOK_AGAIN = 1.0


async def follow_bucket(js: JetStreamContext, bucket: str, topic: str, feed: Feed) -> None:
    """Tell `topic` on every change of `bucket` (once it exists), until the watch ends."""
    kv = await _existing(js, bucket)
    async for key in changes(bus.kv_updates(kv, meta_only=True)):
        feed.publish(topic, {"key": key})
    raise WatchEnded(f"console {bucket}")


async def _existing(js: JetStreamContext, bucket: str) -> KeyValue:
    while True:
        try:
            return await js.key_value(bucket)
        except BucketNotFoundError:
            await anyio.sleep(LOOK_AGAIN)


async def follow_trail(nc: NatsClient, feed: Feed) -> None:
    """Tell `audit` each time the collector chains a record, with the record's place in the chain."""
    subscription = await nc.subscribe(names.AUDIT_LEDGER)
    try:
        async for message in subscription.messages:
            entry = events_pb2.LedgerEntry.FromString(message.data)
            feed.publish("audit", {"index": entry.index})
    finally:
        await subscription.unsubscribe()
    raise WatchEnded("console audit trail")


async def follow_connections(nc: NatsClient, feed: Feed) -> None:
    """Tell `servers` each time an upstream server's connection changes state on a tools replica."""
    subscription = await nc.subscribe(names.CONNECTION_CHANGED)
    try:
        async for message in subscription.messages:
            change = upstream_pb2.ConnectionChanged.FromString(message.data)
            feed.publish("servers", {"server": change.server_id, "state": STATES.get(change.state, "unknown")})
    finally:
        await subscription.unsubscribe()
    raise WatchEnded("console connection states")
