"""`make run` as a process: two stacks side by side and a third refused the port one of them serves on, a configured
token, restarts of the stack, stopping on SIGTERM, a service killed with -9 started again, and an existing NATS used."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from saip.common.natsd import LocalNats, free_port, port_is_free
from tests.e2e.stack import SAIP, Stack, start_stack
from tests.waiting import eventually

pytestmark = pytest.mark.e2e
STARTED = re.compile(r"\| (\w+) started \(pid=(\d+)\)")
# A line of the launcher's output under a process's name, as honcho prints one: the time, the name padded, " | ".
PREFIXED = re.compile(r"^\d\d:\d\d:\d\d (\w+) +\| (.*)$")


def started(stack: Stack) -> dict[str, int]:
    """Each process's pid, as the launcher's last `<name> started (pid=N)` line for it says."""
    return {match.group(1): int(match.group(2)) for line in list(stack.lines) if (match := STARTED.search(line))}


def wait_for(condition: Callable[[], bool], within: float = 60.0) -> None:
    """Until `condition` holds, for at most `within` seconds (the stack's own pace)."""
    anyio.run(functools.partial(eventually, condition, within=within, every=0.1))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent has not collected it yet.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_two_stacks_run_side_by_side_a_third_on_a_taken_port_is_refused_and_sigterm_stops_everything(
    tmp_path: Path,
) -> None:
    first = start_stack(tmp_path / "one")
    second = start_stack(tmp_path / "two")
    try:
        for stack in (first, second):
            assert httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200
        assert first.mcp_token != second.mcp_token
        started = first.descendants()
        assert len(started) >= 4  # honcho's workers and nats, audit, tools, gateway below them
        # A third `saip run` on the first one's port, while it serves there: refused before it starts anything.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SAIP_")}
        env.update({"SAIP_HOME": str(tmp_path / "three"), "SAIP_GATEWAY_PORT": str(first.port)})
        taken = subprocess.run([str(SAIP), "run"], env=env, capture_output=True, text=True, timeout=30, check=False)
    finally:
        stopped = first.stop()
        second.stop()
    assert taken.returncode == 2
    assert f"port {first.port} is in use" in taken.stderr and "SAIP_GATEWAY_PORT" in taken.stderr
    assert stopped, "the launcher did not exit on SIGTERM; its process group was killed"
    assert [pid for pid in started if alive(pid)] == []
    assert first.process.returncode is not None
    assert port_is_free(first.port)


def test_a_service_killed_with_9_is_restarted_and_a_stop_then_ends_every_process_gracefully(tmp_path: Path) -> None:
    stack = start_stack(tmp_path)
    try:
        pids = started(stack)
        # The pid the launcher printed is the service itself (forked by the fork server, renamed after its module).
        assert Path(f"/proc/{pids['audit']}/comm").read_text().strip() == "saip.audit"
        os.kill(pids["audit"], signal.SIGKILL)
        wait_for(lambda: started(stack)["audit"] != pids["audit"])
        restarted = started(stack)["audit"]
        wait_for(lambda: httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200)
        running = stack.descendants()
    finally:
        stopped = stack.stop()
    assert stopped
    said = [line.split("|", 1)[1].strip() for line in stack.lines if line.split("|", 1)[0].strip().endswith("system")]
    assert said.index("audit stopped (rc=-9)") < said.index(
        "audit was killed by SIGKILL; restarting it in 1 s (restart 1)"
    )
    # Each Python service's line (written by the service itself) is whole under its name: one JSON object each.
    python = set(pids) - {"nats"}
    own = [match.groups() for line in stack.lines if (match := PREFIXED.match(line)) and match[1] in python]
    assert {name for name, _ in own} >= {"gateway", "audit", "tools", "knowledge", "shipyard"}
    assert all(isinstance(json.loads(text), dict) for _, text in own)
    for name, pid in {**pids, "audit": restarted}.items():
        if name != "nats":
            assert f"sending SIGTERM to {name} (pid {pid})" in said
        assert not any(line.startswith(f"sending SIGKILL to {name}") for line in said)
    assert not any("everything else was stopped" in line for line in stack.lines)
    assert [pid for pid in running if alive(pid)] == []


def test_a_service_that_cannot_start_is_named_in_the_last_line_with_where_to_look(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAIP_")}
    env.update(
        {"SAIP_HOME": str(tmp_path), "SAIP_GATEWAY_PORT": str(free_port()), "SAIP_TOOLS_SANDBOX_WORKERS": "many"}
    )
    ran = subprocess.run([str(SAIP), "run"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 1
    assert "invalid configuration: tools.sandbox-workers (SAIP_TOOLS_SANDBOX_WORKERS)" in ran.stdout + ran.stderr
    assert ran.stderr.splitlines()[-1] == (
        "saip run: tools exited with 1 before saip was ready (its lines above say why); everything else was stopped."
    )


def test_a_configured_token_is_used_and_cannot_be_changed_through_the_api(tmp_path: Path) -> None:
    configured = "configured-token-" + "x" * 24
    with start_stack(tmp_path, env={"SAIP_MCP_SERVER_AUTH_TOKEN": configured}) as stack:
        assert stack.mcp_token == configured
        with stack.api() as api:
            rotate, remove = api.post("/api/v1/mcp-token"), api.delete("/api/v1/mcp-token")
            status = api.get("/api/v1/status").json()["data"]
        for reply in (rotate, remove):
            assert reply.status_code == 409
            assert "mcp-server.auth-token" in reply.json()["message"]
        assert status["mcp"]["token"]["source"] == "configuration"
        assert not (tmp_path / "mcp-token").exists()


def test_the_token_is_generated_once_and_a_removal_survives_a_restart(tmp_path: Path) -> None:
    with start_stack(tmp_path) as first:
        token = first.mcp_token
    with start_stack(tmp_path) as second:
        assert second.mcp_token == token
        with second.api() as api:
            api.delete("/api/v1/mcp-token").raise_for_status()
    with start_stack(tmp_path) as third:
        assert third.mcp_token.startswith("none (it was removed)")
        with third.api() as api:
            status = api.get("/api/v1/management/status").json()["data"]
        assert status["reason"] == "no bearer token on the built-in server"


def test_an_existing_nats_is_used_when_saip_nats_url_is_set(tmp_path: Path, nats_server: LocalNats) -> None:
    home = tmp_path / "home"
    with start_stack(home, env={"SAIP_NATS_URL": nats_server.url}) as stack:
        assert httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200
        started = {line.split("|", 1)[1].strip() for line in stack.lines if "system" in line and "started" in line}
    assert not any(line.startswith("nats started") for line in started)
    assert {"audit", "tools", "gateway"} <= {line.split()[0] for line in started}
    assert not (home / "nats").exists()
