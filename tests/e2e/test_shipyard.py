"""The shipyard end to end, started as `make run` starts it: the person publishes a knowledge tool and ships it from
the command line, runs it locally, reads its token, and real clients (mcpdo in both eras) connect to the shipped
server; a wrong token is refused; the server stops and is deleted."""

from __future__ import annotations

import json

import pytest

from tests.e2e.real_clients import Mcpdo
from tests.e2e.stack import Stack
from tests.e2e.test_spine import cli

pytestmark = pytest.mark.e2e

RUNBOOK = "# Broker runbook ({era})\n\nRestart the NATS broker with systemctl when clients report stale connections."


def ok(stack: Stack, *args: str) -> str:
    done = cli(stack, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_shipped_knowledge_server_answers_real_clients_with_its_own_token(
    stack: Stack, mcpdo: Mcpdo, era: str
) -> None:
    name = f"runbook-{era}"
    ok(stack, "knowledge", "ingest", "--text", RUNBOOK.format(era=era), "--name", f"{name}.md")
    tool = f"broker_answers_{era}"
    ok(
        stack,
        "knowledge",
        "publish",
        tool,
        "-p",
        "All documents (simple)",
        "--description",
        "Answers broker questions.",
    )
    assert "can ship" in ok(stack, "shipyard", "validate", name, "--description", "Broker answers.", "-t", tool)
    assert f"Shipped '{name}' v1" in ok(stack, "shipyard", "ship", name, "--description", "Broker answers.", "-t", tool)
    ran = ok(stack, "shipyard", "run", name)
    assert "The bearer token is shown to the person in the app, not here." in ran
    shown = ok(stack, "shipyard", "token", name)
    endpoint = next(line.split()[-1] for line in shown.splitlines() if line.startswith("Endpoint"))
    token = next(line.split()[-1] for line in shown.splitlines() if line.startswith("Bearer token"))

    refused = mcpdo.connect(endpoint, token + "x", era)
    assert mcpdo.connection == "" and "401" in refused
    mcpdo.connect(endpoint, token, era)
    names = [found["name"] for found in mcpdo.json("tools/list")["tools"]]
    assert names == [tool]
    answer = mcpdo.json("tools/call", tool, json.dumps({"query": "restart the broker"}))
    assert not answer.get("isError") and "systemctl" in answer["content"][0]["text"]

    assert "running" in ok(stack, "shipyard", "status", name)
    ok(stack, "shipyard", "stop", name)
    ok(stack, "shipyard", "delete", name)
    assert name not in ok(stack, "shipyard", "servers")
