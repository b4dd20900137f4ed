"""How long a token rotated through one gateway replica's REST API takes to be refused by the other replica.

Two `python -m saip.gateway` processes share one nats-server, as two pods of the k8s Deployment share NATS. Each
round rotates the MCP token on replica one (POST /api/v1/mcp-token) and polls replica two's /mcp with the old token
until it answers 401: the window in which a leaked old token still works somewhere. Replica one refuses the old token
before its POST returns. Baseline, on the same server in the same run: a bare NATS KV put and its delivery to a
watcher in another connection, the transport every replica's token watch rides on.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio
import httpx

from bench.stats import summary, table
from saip.common import bus, jetstream
from saip.common.natsd import LocalNats
from tests.integration.gateways import ADMIN_HEADERS, GatewayProcess, ready, start_replica

ROUNDS = 200
WARMUP = 10
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def _refuses(client: httpx.AsyncClient, replica: GatewayProcess, token: str) -> bool:
    reply = await client.post(
        f"{replica.url}/mcp",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        json=PING,
    )
    return reply.status_code == 401


async def _rotate(client: httpx.AsyncClient, replica: GatewayProcess) -> str:
    reply = await client.post(f"{replica.url}/api/v1/mcp-token", headers=ADMIN_HEADERS)
    reply.raise_for_status()
    return str(reply.json()["data"]["token"])


async def _until(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Poll without pause (each poll is one HTTP round trip) until `check()` is true; fail after `within` s."""
    with anyio.fail_after(within):
        while not await check():
            pass


async def _propagation(one: GatewayProcess, two: GatewayProcess) -> tuple[list[float], list[float], list[float]]:
    """Per round: the rotate call's answer, the old token's first 401 on replica two, and one 401 round trip."""
    answered, refused, probe = [], [], []
    async with httpx.AsyncClient(timeout=5) as client:
        old = await _rotate(client, one)
        await _until(partial(_accepts, client, two, old))
        for n in range(WARMUP + ROUNDS):
            started = time.perf_counter()
            new = await _rotate(client, one)
            rotated = time.perf_counter()
            await _until(partial(_refuses, client, two, old))
            done = time.perf_counter()
            await _refuses(client, two, old)
            probed = time.perf_counter()
            await _until(partial(_accepts, client, two, new))
            if n >= WARMUP:
                answered.append((rotated - started) * 1000)
                refused.append((done - started) * 1000)
                probe.append((probed - done) * 1000)
            old = new
    return answered, refused, probe


async def _accepts(client: httpx.AsyncClient, replica: GatewayProcess, token: str) -> bool:
    return not await _refuses(client, replica, token)


async def _kv_delivery(url: str) -> list[float]:
    """A put on one connection until a watcher on another receives it: NATS's own part of a token change."""
    writer = await bus.connect(url, "bench-writer")
    reader = await bus.connect(url, "bench-reader")
    samples = []
    try:
        kv = await jetstream.ensure_kv(writer.jetstream(), "bench-baseline")
        watched = await (await reader.jetstream().key_value("bench-baseline")).watch("key", include_history=False)
        for n in range(WARMUP + ROUNDS):
            started = time.perf_counter()
            await kv.put("key", str(n).encode())
            with anyio.fail_after(10):
                while True:
                    entry = await watched.updates(timeout=10)
                    if entry is not None and entry.value == str(n).encode():
                        break
            if n >= WARMUP:
                samples.append((time.perf_counter() - started) * 1000)
        await watched.stop()
    finally:
        await writer.close()
        await reader.close()
    return samples


async def _measure(home: Path, nats: LocalNats) -> tuple[list[float], ...]:
    one = start_replica(home, nats.url, "one", module="saip.gateway")
    two = start_replica(home, nats.url, "two", module="saip.gateway")
    try:
        await ready(one)
        await ready(two)
        baseline = await _kv_delivery(nats.url)
        answered, refused, probe = await _propagation(one, two)
    finally:
        one.stop()
        two.stop()
    return baseline, answered, refused, probe


def run() -> str:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        nats = LocalNats(home / "nats")
        nats.start()
        try:
            baseline, answered, refused, probe = anyio.run(_measure, home, nats)
        finally:
            nats.stop()
    base, measured = summary(baseline), summary(refused)
    keys = ("p50", "p90", "p99", "mean")
    return table(
        f"Token rotation propagation across two gateway replicas, ms ({ROUNDS} rotations after {WARMUP} warm-up)",
        ["", *keys],
        [
            ["bare NATS KV put -> watch delivery (baseline)", *(base[key] for key in keys)],
            ["rotate on replica one -> old token 401 on two", *(measured[key] for key in keys)],
            ["added by saip", *(measured[key] - base[key] for key in keys)],
            ["  of which: the rotate call's answer (one)", *(summary(answered)[key] for key in keys)],
            ["  of which: one /mcp 401 round trip (two)", *(summary(probe)[key] for key in keys)],
        ],
    )
