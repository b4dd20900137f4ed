"""One stack for the e2e module that shares it (tests that need their own start one with `start_stack`), and the
MCP Inspector's `mcpdo` with a private daemon per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.real_clients import Mcpdo, installed
from tests.e2e.stack import Stack, start_stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("saip-home"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def mcpdo(tmp_path: Path) -> Iterator[Mcpdo]:
    assert installed(), "the npm test clients are missing: run `make install`"
    client = Mcpdo(tmp_path / "mcpdo")
    try:
        yield client
    finally:
        client.stop()
