"""Reading the trail leaves no consumer behind: each read of the ledger opens an ordered consumer, and unsubscribing
alone left it on the server for its inactivity threshold, so a burst of monitor reads piled consumers up towards
the account's limit, which the tools service shares. Real audit service, real nats-server."""

from __future__ import annotations

from nats.aio.client import Client as NatsClient

from saip.common import names
from saip.common.natsd import LocalNats
from saip.v1 import audit_pb2
from tests.integration.audit_support import audit_client, chain_calls, ledger_messages, running_audit

READS = 200


async def consumers(nats_client: NatsClient) -> int:
    return int((await nats_client.jetstream().stream_info(names.AUDIT_STREAM)).state.consumer_count)


async def test_a_burst_of_ledger_reads_leaves_the_consumer_count_where_it_was(
    nats_server: LocalNats, nats_client: NatsClient
) -> None:
    async with running_audit(nats_server.url) as audit, audit_client(audit.port) as stub:
        await chain_calls(nats_client.jetstream(), stub, 3)
        before = await consumers(nats_client)
        for _ in range(READS):
            assert len(await ledger_messages(nats_client)) >= 3
            await stub.VerifyChain(audit_pb2.VerifyChainRequest(), timeout=10)
        assert await consumers(nats_client) == before
