"""Whether a call's client follows its progress: what decides between one unary round trip to a serving service and
a stream of progress events."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest

from saip.gateway.surface.mcp_server import McpInteraction

OVER_HTTP, IN_PROCESS = object(), None


def interaction(request: object | None, meta: dict[str, Any] | None) -> McpInteraction:
    params = types.CallToolRequestParams.model_validate({"name": "echo", "arguments": {}, "_meta": meta})
    context: Any = SimpleNamespace(request=request)  # the only part of the SDK's request context this reads
    return McpInteraction(context, params)


@pytest.mark.parametrize(
    ("request_", "meta", "follows"),
    [
        pytest.param(OVER_HTTP, {"progressToken": 7}, True, id="http-with-a-progress-token"),
        pytest.param(OVER_HTTP, {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, False, id="http-no-token"),
        pytest.param(OVER_HTTP, None, False, id="http-no-meta"),
        pytest.param(IN_PROCESS, None, True, id="in-process-may-take-progress-by-callback"),
    ],
)
def test_progress_is_followed_when_the_client_sent_a_token_or_may_take_it_in_process(
    request_: object | None, meta: dict[str, Any] | None, follows: bool
) -> None:
    assert interaction(request_, meta).reports_progress is follows
