"""Fuzzed input on the stack as `make run` starts it: arguments for every management tool get a clean refusal or a
result, and schemathesis's requests to every route of the REST API (its OpenAPI document) never get a server error;
nothing crashes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.stack import Stack, mcp_client

pytestmark = pytest.mark.e2e

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
# Real property names (so types and ranges get exercised) and made-up ones (so unknown properties do).
names = st.sampled_from(
    ["limit", "before", "tool", "outcome", "type", "recent", "name", "spec", "arguments", "autoExpose", "tools"]
) | st.text(min_size=1, max_size=8)
arguments = st.dictionaries(names, json_values, max_size=4)


def test_fuzzed_arguments_get_a_clean_answer_and_the_stack_stays_whole(stack: Stack) -> None:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(mcp_client(stack.mcp_url, stack.mcp_token, mode="legacy")) as client,
    ):
        tools = [tool.name for tool in portal.call(client.list_tools).tools if tool.name.startswith("saip_")]
        assert len(tools) >= 4

        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(tool=st.sampled_from(tools), args=arguments)
        def answer_is_clean(tool: str, args: dict[str, Any]) -> None:
            result = portal.call(client.call_tool, tool, args)
            assert isinstance(result, types.CallToolResult)
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            data = json.loads(block.text)
            assert set(data) == {"ok", "message", "persisted", "restartRequired", "warnings", "data"}
            if not data["ok"]:
                # A refusal is a sentence to act on: the arguments, a service rule (no such tool, a bad spec), or a
                # step that needs the person (this client cannot be asked); never an unexpected error.
                assert not data["message"].startswith("Unexpected error"), data["message"]
                assert data["message"].endswith((".", ")")), data["message"]
                assert result.is_error

        answer_is_clean()
    assert httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200
    with stack.api() as api:
        assert api.get("/api/v1/audit/verify").json()["ok"] is True


SCHEMATHESIS = Path(sys.executable).parent / "st"
FUZZ_SECONDS = 150  # schemathesis's whole run (its coverage, fuzzing and stateful phases share it)
# Not fuzzed: the tail streams until its client leaves; the others make the stack connect to an address the request
# names (an upstream server to register or test, a document's URL), and a test sends traffic to this machine only.
NOT_FUZZED = [
    ("GET", "/api/v1/audit/tail"),
    ("POST", "/api/v1/servers"),
    ("POST", "/api/v1/servers/catalog"),
    ("POST", "/api/v1/servers/test"),
    ("POST", "/api/v1/knowledge/documents"),
]


@pytest.mark.timeout(FUZZ_SECONDS + 180)
def test_no_request_to_the_rest_api_gets_a_server_error_and_the_stack_stays_whole(stack: Stack, tmp_path: Path) -> None:
    with stack.api() as api:
        openapi = api.get("/api/openapi.json").json()
    excluded = [
        f"--exclude-operation-id={openapi['paths'][path][method.lower()]['operationId']}" for method, path in NOT_FUZZED
    ]
    done = subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{stack.url}/api/openapi.json",
            f"--header=Authorization: Bearer {stack.admin_token}",
            "--checks=not_a_server_error",
            f"--max-time={FUZZ_SECONDS}",
            "--workers=1",
            "--request-timeout=30",
            "--generation-database=none",
            "--no-color",
            *excluded,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 120,
        check=False,
    )
    # Its report names each failing route with the curl that reproduces it, and the seed that replays the run.
    assert done.returncode == 0, done.stdout[-12_000:] + done.stderr[-2_000:]
    assert httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200
    with stack.api() as api:
        assert api.get("/api/v1/audit/verify").json()["ok"] is True
