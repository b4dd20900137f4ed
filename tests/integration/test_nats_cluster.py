"""The NATS of k8s/: its nats.conf is one nats-server accepts, and with `nats-replicas: 3` on a 3-node JetStream
cluster the gateway's buckets and the audit stream keep a copy on every node, so one node can go away."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError

from saip.common import bus, names, natsd
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.server import Gateway
from tests.contract.deployment import ROOT
from tests.integration.gateways import replica_settings
from tests.waiting import eventually

pytestmark = pytest.mark.integration

NODES = 3


def test_the_k8s_nats_conf_is_valid_for_nats_server(tmp_path: Path) -> None:
    [config_map] = [
        doc for doc in yaml.safe_load_all((ROOT / "k8s" / "nats.yaml").read_text()) if doc["kind"] == "ConfigMap"
    ]
    conf = tmp_path / "nats.conf"
    conf.write_text(config_map["data"]["nats.conf"])
    done = subprocess.run(
        [str(natsd.binary()), "--config", str(conf), "-t"],
        env={**os.environ, "POD_NAME": "nats-0"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@dataclass
class Node:
    process: subprocess.Popen[bytes]
    url: str

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[Node]]:
    """Three JetStream nodes on loopback routed to each other, as the StatefulSet's pods are."""
    clients = [natsd.free_port() for _ in range(NODES)]
    routes = [natsd.free_port() for _ in range(NODES)]
    nodes: list[Node] = []
    try:
        for index, port in enumerate(clients):
            command = [
                *natsd.command(port, tmp_path / f"nats-{index}"),
                *["--server_name", f"nats-{index}", "--cluster_name", "saip"],
                *["--cluster", f"nats://127.0.0.1:{routes[index]}"],
                *["--routes", ",".join(f"nats://127.0.0.1:{route}" for route in routes)],
            ]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            nodes.append(Node(process, f"nats://127.0.0.1:{port}"))
        yield nodes
    finally:
        for node in nodes:
            node.kill()


async def jetstream_ready(nc: NatsClient) -> bool:
    """True once the cluster elected its JetStream meta leader (account info answers)."""
    try:
        await nc.jetstream().account_info()
    except (NatsError, TimeoutError):
        return False
    return True


async def replicas_of(nc: NatsClient, stream: str) -> int:
    return int((await nc.jetstream().stream_info(stream)).config.num_replicas or 1)


async def test_three_replicas_keep_the_token_and_the_audit_trail_through_a_node_going_away(
    cluster: list[Node], tmp_path: Path
) -> None:
    first, _, last = cluster
    nc = await bus.connect(first.url, "test", within=20)
    try:
        await eventually(lambda: jetstream_ready(nc), within=30, every=0.2)
        gateway = Gateway(replica_settings(tmp_path, first.url, "one", nats_replicas=NODES))
        async with gateway.running():
            buckets = (names.AUTH_BUCKET, names.APPROVALS_BUCKET, names.QUESTIONS_BUCKET)
            for stream in (*(f"KV_{bucket}" for bucket in buckets), names.AUDIT_STREAM):
                assert await replicas_of(nc, stream) == NODES, stream

            async def rotated() -> str | None:
                # A new stream's interest reaches every node's routes a moment after it is created, and if a killed
                # node held a stream's leader the other two elect a new one: meanwhile the call says to try again.
                try:
                    return await gateway.token_service.rotate(created_by="test")
                except ServiceUnavailable:
                    return None

            before = await eventually(rotated, within=30, every=0.2)

            last.kill()

            after = await eventually(rotated, within=30, every=0.2)
            kv = await nc.jetstream().key_value(names.AUTH_BUCKET)
            entry = await kv.get(names.MCP_TOKEN_KEY)
            assert entry.value is not None and gateway.tokens.matches(after) and not gateway.tokens.matches(before)
    finally:
        await nc.close()
