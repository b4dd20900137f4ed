"""Fixtures every test folder shares: the anyio backend and a real nats-server on a free port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NatsClient

from saip.common import bus
from saip.common.natsd import LocalNats


@pytest.fixture
def anyio_backend() -> str:
    """Every coroutine test runs under anyio (anyio_mode = auto) on asyncio, which nats-py and grpc.aio need."""
    return "asyncio"


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[LocalNats]:
    """A fresh JetStream server for one test, stopped afterwards; `restart()` keeps its port and store."""
    server = LocalNats(tmp_path / "nats")
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
async def nats_client(nats_server: LocalNats) -> AsyncIterator[NatsClient]:
    client = await bus.connect(nats_server.url, "test", within=10)
    try:
        yield client
    finally:
        await client.close()
