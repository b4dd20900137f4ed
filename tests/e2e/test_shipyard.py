"""The shipyard end to end, started as `make run` starts it: the person publishes a knowledge tool and ships it from
the command line, runs it locally, reads its token, and real clients (mcpdo in each era) connect to the shipped
server; a wrong token is refused; the server stops and is deleted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.real_clients import private_mcpdo
from tests.e2e.stack import Stack
from tests.e2e.test_spine import cli

pytestmark = pytest.mark.e2e
# Its names are its own and it deletes the server it ships; the knowledge tool it publishes only adds to the tools
# other modules list with `>=`: it runs on the session's shared stack (tests/e2e/conftest.py).
SHARED_STACK = True

RUNBOOK = "# Broker runbook\n\nRestart the NATS broker with systemctl when clients report stale connections."


def ok(stack: Stack, *args: str) -> str:
    done = cli(stack, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_shipped_knowledge_server_answers_real_clients_of_both_eras_with_its_own_token(
    stack: Stack, tmp_path: Path
) -> None:
    """One server, shipped and run from the command line, serves mcpdo in each era (a private daemon per era): the
    command line's steps do not depend on the era the shipped server is later asked in, so they run once."""
    name = "runbook"
    ok(stack, "knowledge", "ingest", "--text", RUNBOOK, "--name", f"{name}.md")
    tool = "broker_answers"
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
    assert ran.splitlines()[-1] == f"Its bearer token: saip shipyard token {name}"
    shown = ok(stack, "shipyard", "token", name)
    endpoint = next(line.split()[-1] for line in shown.splitlines() if line.startswith("Endpoint"))
    token = next(line.split()[-1] for line in shown.splitlines() if line.startswith("Bearer token"))

    for era in ("legacy", "modern"):
        with private_mcpdo(tmp_path / f"mcpdo-{era}") as mcpdo:
            refused = mcpdo.connect(endpoint, token + "x", era)
            assert mcpdo.connection == "" and "401" in refused, era
            mcpdo.connect(endpoint, token, era)
            names = [found["name"] for found in mcpdo.json("tools/list")["tools"]]
            assert names == [tool], era
            answer = mcpdo.json("tools/call", tool, json.dumps({"query": "restart the broker"}))
            assert not answer.get("isError") and "systemctl" in answer["content"][0]["text"], era

    assert "running" in ok(stack, "shipyard", "status", name)
    ok(stack, "shipyard", "stop", name)
    ok(stack, "shipyard", "delete", name)
    assert name not in ok(stack, "shipyard", "servers")
