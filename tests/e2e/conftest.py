"""The stack an e2e module's tests share, and the MCP Inspector's `mcpdo` with a private daemon per test.

A module gets a stack of its own unless it says `SHARED_STACK = True`: then it runs on the one stack of the session
that every such module shares, which saves a start and a stop of the whole stack per module. A module may share only
if its tests neither depend on a fresh stack (exact listings of tools, documents or audit entries) nor leave behind
what another module's assertions would see; one that rotates the MCP token writes the new one into the stack's
banner, as test_spine.py does. Tests that need a stack configured their own way start one with `start_stack`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.real_clients import Mcpdo, private_mcpdo
from tests.e2e.stack import Stack, start_stack


@pytest.fixture(scope="session")
def shared_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("saip-shared-home")) as running:
        yield running


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if getattr(request.module, "SHARED_STACK", False):
        yield request.getfixturevalue("shared_stack")
        return
    with start_stack(tmp_path_factory.mktemp("saip-home")) as running:
        yield running


@pytest.fixture
def mcpdo(tmp_path: Path) -> Iterator[Mcpdo]:
    with private_mcpdo(tmp_path / "mcpdo") as client:
        yield client
