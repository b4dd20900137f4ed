"""`saip run` keeps serving when one of its processes dies. NATS, then each service in turn, killed with -9 while
calls come in, is started again (its lines and `saip status` say so) and serves again; meanwhile a call that needs it
is answered with the "not reachable" sentence and the calls that do not are answered as ever; the stack never stops;
and every call that was answered, whatever it was answered, is on the audit trail (JetStream and the gateway's spool
keep the records through it all)."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from tests.e2e.stack import Stack, mcp_client, start_stack
from tests.e2e.test_local_stack import started
from tests.e2e.test_spine import cli
from tests.e2e.test_tool_studio import envelope
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

IN_TURN = ("nats", "audit", "knowledge", "shipyard", "tools", "gateway")
# A read that needs each service, and the argument that carries the call's mark (which its audit record keeps).
NEEDS = {
    "audit": ("saip_monitor_management_log", "tool"),
    "knowledge": ("saip_knowledge_search", "query"),
    "shipyard": ("saip_shipyard_status", "name"),
    "tools": ("saip_tools_get", "name"),
}
UNREACHABLE = re.compile(r"The (\w+) service is not reachable right now \(.+\); try again shortly\.")
BACK_WITHIN = 90.0  # a service's start and the gateway seeing it again, on a loaded machine


class Calls:
    """The calls made while the processes die and come back: each one's mark, tool and what it was answered."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.answered: dict[str, tuple[str, str]] = {}  # mark -> (tool, message)
        self._marks = itertools.count(1)

    async def one(self, service: str) -> str | None:
        """One call of the read that needs `service`: the message it was answered, or None when no answer came (the
        gateway was away)."""
        tool, argument = NEEDS[service]
        mark = f"restart-probe-{next(self._marks)}"
        result = None
        try:
            async with mcp_client(self.stack.mcp_url, self.stack.mcp_token) as client:
                result = await client.call_tool(tool, {argument: mark})
        except* (httpx2.HTTPError, OSError):
            result = None  # the gateway was away, or went while it answered: no answer came
        if result is None:
            return None
        message = str(envelope(result)["message"])
        self.answered[mark] = (tool, message)
        return message

    async def round(self, away: str) -> dict[str, str | None]:
        """One call that needs each service, while `away` is away or coming back: a call that was not answered as
        ever was answered with the sentence that names the service it needs (or NATS, which every service needs)."""
        said = {service: await self.one(service) for service in NEEDS}
        for service, message in said.items():
            unreachable = UNREACHABLE.fullmatch(message or "")
            if unreachable is not None:
                assert unreachable.group(1) in (service, away, "nats"), (away, service, message)
        return said


def serving(stack: Stack, name: str, before: int, said: dict[str, str | None]) -> bool:
    """Whether `name` runs again (a new pid, the gateway healthy) and the call that needs it was served."""
    if started(stack).get(name, before) == before:
        return False
    try:
        healthy = httpx.get(f"{stack.url}/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False
    return healthy and all(message is not None and not UNREACHABLE.fullmatch(message) for message in said.values())


async def recorded(stack: Stack, calls: Calls) -> set[str]:
    """The marks of the answered calls that are not on the audit trail yet."""
    arguments: list[str] = []
    with stack.api() as api:
        for tool in {tool for tool, _ in NEEDS.values()}:
            cursor = None
            while True:
                query: dict[str, Any] = {"tool": tool, "limit": 100, **({"before": cursor} if cursor else {})}
                data = api.get("/api/v1/audit/management-log", params=query).json()["data"]
                arguments += [entry["arguments"] for entry in data["entries"]]
                cursor = data["nextCursor"]
                if cursor is None:
                    break
    marks = {mark for text in arguments for mark in re.findall(r"restart-probe-\d+", text)}
    return set(calls.answered) - marks


@pytest.mark.timeout(900)
async def test_each_process_killed_under_calls_comes_back_serving_and_no_audit_record_is_lost(tmp_path: Path) -> None:
    stack = start_stack(tmp_path)
    calls = Calls(stack)
    try:
        for name in IN_TURN:
            before = started(stack)[name]
            os.kill(before, signal.SIGKILL)

            async def back(name: str = name, before: int = before) -> bool:
                return serving(stack, name, before, await calls.round(name))

            await eventually(back, within=BACK_WITHIN, every=0.2)
        status = cli(stack, "status")
        await eventually(lambda: all_recorded(stack, calls), within=60, every=1.0)
        away = [message for _, message in calls.answered.values() if UNREACHABLE.fullmatch(message)]
    finally:
        stopped = stack.stop()
    assert stopped
    said = [line.split("|", 1)[1].strip() for line in stack.lines if line.split("|", 1)[0].strip().endswith("system")]
    for name in IN_TURN:
        assert f"{name} was killed by SIGKILL; restarting it in 1 s (restart 1)" in said
    assert not any("everything else was stopped" in line for line in stack.lines)
    assert status.returncode == 0, status.stderr
    # NATS sends no heartbeat: the services' own counts are what the status shows (a service that its lost NATS
    # made fail was restarted once more).
    [shown] = [line.split(":", 1)[1] for line in status.stdout.splitlines() if line.startswith("Restarts:")]
    counts = {name: int(count) for name, count in (entry.split() for entry in shown.split(","))}
    assert set(counts) == {"audit", "gateway", "knowledge", "shipyard", "tools"} and min(counts.values()) >= 1
    assert calls.answered and away, "no call came while a service was away: nothing was checked of them"
    print(json.dumps({"answered": len(calls.answered), "unreachable": len(away)}))


async def all_recorded(stack: Stack, calls: Calls) -> bool:
    return not await recorded(stack, calls)
