"""What publishing a tool would do, read before it is done: `GET /api/v1/tools/{name}/publish` and `saip tools
publish NAME --dry-run` say what changes and at which risk, as the AI's question says it, or the refusal the publish
would answer; nothing changes. A real gateway over HTTP, the real tools service and NATS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner

from saip.cli.group import cli
from saip.common.natsd import LocalNats, free_port
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from tests.integration.gateways import ADMIN, ADMIN_HEADERS, replica_settings
from tests.integration.tools_support import running_tools
from tests.unit.tools.specs import document

pytestmark = pytest.mark.integration

FETCHER = document("fetcher", sandbox={"networkMode": "allowlist", "hostsAllow": ["api.example.com"]})


async def saip(url: str, *arguments: str) -> tuple[int, Any]:
    """`saip --json ...` against the gateway (in a thread: the gateway answers on this event loop)."""
    command = ["--url", url, "--admin-token", ADMIN, *arguments, "--json"]
    result = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, command))
    return result.exit_code, json.loads(result.output)


async def test_the_person_reads_what_a_publish_would_do_and_at_which_risk_before_anything_changes(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    async with running_tools(nats_server.url) as tools:
        settings = replica_settings(
            tmp_path, nats_server.url, "one", gateway_port=free_port(), tools_addr=f"127.0.0.1:{tools.port}"
        )
        url = f"http://127.0.0.1:{settings.gateway_port}"
        async with over_http(Gateway(settings)), httpx.AsyncClient(base_url=url, headers=ADMIN_HEADERS) as api:
            assert (await api.post("/api/v1/tools", json={"spec": FETCHER})).json()["ok"]
            untested = (await api.get("/api/v1/tools/fetcher/publish")).json()
            refused = (await api.post("/api/v1/tools/fetcher/publish")).json()
            assert (await api.post("/api/v1/tools/fetcher/test", timeout=60)).json()["data"]["localPass"]
            exit_code, planned = await saip(url, "tools", "publish", "fetcher", "--dry-run")
            state = (await api.get("/api/v1/tools/fetcher")).json()["data"]["state"]
            missing = await api.get("/api/v1/tools/ghost/publish")
    # Untested, the plan is the publish's own refusal, and not ok.
    assert (untested["ok"], untested["message"]) == (False, refused["message"])
    assert untested["data"]["refused"] and untested["message"].startswith("'fetcher' has no Local Pass")
    # Tested, it says what changes and at which risk, as the AI's question does; the tool is still a draft.
    assert exit_code == 0 and planned["ok"] is True
    assert planned["message"] == (
        "Publish 'fetcher' and serve it on /mcp: risk L3, network allowlist (api.example.com), each call asks the "
        "person."
    )
    data = planned["data"]
    assert (data["level"], data["highRisk"], data["refused"]) == ("DESTRUCTIVE", True, None)
    assert (data["risk"]["risk"], data["risk"]["tested"]) == ("L3", True)
    assert state == "draft"
    assert missing.status_code == 404
