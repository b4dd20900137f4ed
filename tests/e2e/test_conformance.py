"""The MCP conformance suite's server scenarios against the stack `make run` starts.

The suite sends no Authorization header, so it runs against a stack whose MCP token was removed: /mcp is then open
and serves the published tools only. The scenarios left out need the reference server's own fixtures
(`test_simple_text`, `test://static-text`, ...) or features saip does not offer (logging/setLevel, completion).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.real_clients import conformance, installed
from tests.e2e.stack import Stack, start_stack

pytestmark = pytest.mark.e2e

SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]


@pytest.fixture(scope="module")
def open_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    assert installed(), "the npm test clients are missing: run `make install`"
    with start_stack(tmp_path_factory.mktemp("saip-open")) as running:
        with running.api() as api:
            assert api.delete("/api/v1/mcp-token").status_code == 200
        yield running


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_server_scenario(open_stack: Stack, scenario: str, tmp_path: Path) -> None:
    done = conformance(open_stack.mcp_url, scenario, tmp_path)
    assert done.returncode == 0 and ", 0 failed," in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
