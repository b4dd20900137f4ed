"""Approvals bind what they describe: the tools area's plans read a revision, and a change made while the person
reads the question (or between the plan and the run) is refused with nothing changed, in both protocol eras.

The tools service here is Tool Studio itself over its in-memory fakes (tests/unit/tools/fakes.py), reached through
`StudioClient`, which calls it in-process and turns its refusals into the gateway's, as the gRPC client does.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from saip.gateway.areas.tools.contribution import ToolsArea
from saip.gateway.config import ApprovalMode
from saip.gateway.errors import ServiceRefused
from saip.tools.errors import ToolsError
from saip.v1 import common_pb2, tools_pb2
from tests.unit.gateway.probe import Harness, harness
from tests.unit.tools import fakes
from tests.unit.tools.fakes import Parts
from tests.unit.tools.specs import text

LEGACY, MODERN = "legacy", "auto"
ERAS = [pytest.param(LEGACY, id="2025-11-25"), pytest.param(MODERN, id="2026-07-28")]
CLIENT = types.Implementation(name="probe-client", version="9.9")
OPEN = {"sandbox": {"networkMode": "open"}, "humanInTheLoop": {"mode": "DISABLED"}}
T = TypeVar("T")


class StudioClient:
    """The tools area's client over Tool Studio in this process. `after_plan` runs once right after the next risk
    check (another session saving between a plan and its run)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.after_plan: Callable[[], Awaitable[None]] | None = None

    async def _service(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except ToolsError as exc:
            raise ServiceRefused(str(exc)) from None

    async def check_risk(self, *, name: str = "", spec: dict[str, Any] | None = None) -> tools_pb2.RiskReport:
        report = await self._service(self.parts.studio.check_risk(name, json.dumps(spec) if spec else ""))
        after, self.after_plan = self.after_plan, None
        if after is not None:
            await after()
        return report

    async def get(self, name: str) -> tools_pb2.ToolDetail:
        return await self._service(self.parts.studio.get(name))

    async def test(
        self, name: str, arguments: dict[str, Any] | None = None, expected_revision: int = 0
    ) -> tools_pb2.TestReport:
        given = json.dumps(arguments) if arguments else ""
        return await self._service(self.parts.studio.test(name, given, expected_revision))

    async def publish(self, name: str, expected_revision: int = 0) -> tools_pb2.ToolSummary:
        return await self._service(self.parts.studio.publish(name, expected_revision))

    async def delete(self, name: str, expected_revision: int = 0) -> tools_pb2.DeleteToolReply:
        return await self._service(self.parts.studio.delete(name, expected_revision))

    async def set_exposure(
        self,
        auto_expose: bool,
        tools: list[str],
        expected_revision: int = 0,
        expected_tools: dict[str, int] | None = None,
    ) -> tools_pb2.Exposure:
        return await self._service(self.parts.exposure.set(auto_expose, tools, expected_revision, expected_tools))


async def rewrite(parts: Parts, **changes: Any) -> int:
    """Another session rewrites the draft 'adder' and gives it its Local Pass; returns its new revision."""
    revision = (await parts.studio.check_risk("adder", "")).revision
    await parts.studio.save_draft(text("adder", **changes), revision)
    assert (await parts.studio.test("adder", "")).passed
    return (await parts.studio.check_risk("adder", "")).revision


def meanwhile(change: Callable[[], Awaitable[object]], questions: list[str]) -> Any:
    """The person's client: while the question is out, `change` happens elsewhere; then the person approves."""

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        questions.append(params.message)
        await change()
        return types.ElicitResult(action="accept", content={"approve": ["run"]})

    return answer


async def call(h: Harness, era: str, tool: str, arguments: dict[str, Any], elicit: Any) -> str:
    await h.registrar.refresh()
    async with Client(h.server, mode=era, client_info=CLIENT, elicitation_callback=elicit) as client:
        result = await client.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult) and result.structured_content is not None
    return str(result.structured_content["message"])


def changed(tool: str, asked: int, now: int, era: str) -> str:
    """2025-11-25: the service refuses the run; 2026-07-28: the retry's plan reads another revision than the one
    sealed in the question, and the gate refuses before anything runs."""
    said = f"'adder' changed since the question was asked (revision {asked}, now {now}); read it again and ask again"
    return f"{said} (saip_tools_get reads it)." if era == LEGACY else f"Tool '{tool}' was not run: {said}."


def area(parts: Parts) -> tuple[StudioClient, ToolsArea]:
    client = StudioClient(parts)
    return client, ToolsArea(client, set)  # type: ignore[arg-type]


async def with_pass(parts: Parts) -> int:
    await parts.studio.save_draft(text("adder"), 0)
    assert (await parts.studio.test("adder", "")).passed
    return (await parts.studio.check_risk("adder", "")).revision


async def rewritten_while_asked(
    tmp_path: Path, era: str, tool: str, **changes: Any
) -> tuple[Parts, str, int, int, list[str]]:
    """A draft 'adder' with its Local Pass; `tool` is called on it and approved while another session rewrites it
    with `changes`. Returns the parts, what the call said, the revision asked about, the rewrite's, the questions."""
    parts = fakes.studio()
    asked = await with_pass(parts)
    _, tools = area(parts)
    h = harness(tmp_path, others=[tools])
    rewritten: list[int] = []

    async def attack() -> None:
        rewritten.append(await rewrite(parts, **changes))

    questions: list[str] = []
    said = await call(h, era, tool, {"name": "adder"}, meanwhile(attack, questions))
    assert h.audit.records[-1].outcome != common_pb2.OUTCOME_OK
    return parts, said, asked, rewritten[0], questions


@pytest.mark.parametrize("era", ERAS)
async def test_a_publish_approved_for_one_draft_never_publishes_its_rewrite(tmp_path: Path, era: str) -> None:
    attack = {"code": "return fetch('http://127.0.0.1/');", **OPEN}
    parts, said, asked, now, questions = await rewritten_while_asked(tmp_path, era, "saip_tools_publish", **attack)
    assert "risk L0" in questions[0] and "network blocked" in questions[0]
    assert said == changed("saip_tools_publish", asked, now, era)
    assert (await parts.studio.get("adder")).summary.state == tools_pb2.TOOL_STATE_DRAFT
    assert await parts.published.served() == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_test_asked_as_blocked_is_not_run_as_open(tmp_path: Path, era: str) -> None:
    parts = fakes.studio()
    await parts.studio.save_draft(text("adder"), 0)
    asked = (await parts.studio.check_risk("adder", "")).revision
    _, tools = area(parts)
    h = harness(tmp_path, mode=ApprovalMode.ALL, others=[tools])
    rewritten: list[int] = []

    async def attack() -> None:
        rewritten.append(await rewrite(parts, **OPEN))

    questions: list[str] = []
    said = await call(h, era, "saip_tools_test", {"name": "adder"}, meanwhile(attack, questions))
    assert "network blocked" in questions[0]
    assert said == changed("saip_tools_test", asked, rewritten[0], era)
    assert [job.network_mode for job in parts.runner.jobs] == ["open"]  # the attacker's own pass, nothing else


async def test_a_draft_saved_between_the_plan_and_the_run_of_a_test_does_not_run(tmp_path: Path) -> None:
    """No question (a WRITE under `destructive`): the plan's read decides that, and the run is that read or nothing."""
    parts = fakes.studio()
    await parts.studio.save_draft(text("adder"), 0)
    asked = (await parts.studio.check_risk("adder", "")).revision
    client, tools = area(parts)
    h = harness(tmp_path, others=[tools])

    async def save_open() -> None:
        await parts.studio.save_draft(text("adder", **OPEN), asked)

    client.after_plan = save_open
    said = await call(h, LEGACY, "saip_tools_test", {"name": "adder"}, None)
    now = (await parts.studio.check_risk("adder", "")).revision
    assert said == changed("saip_tools_test", asked, now, LEGACY)
    assert parts.runner.jobs == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_delete_approved_for_one_tool_does_not_delete_another(tmp_path: Path, era: str) -> None:
    description = "Adds two integers and keeps the result."
    parts, said, asked, now, _ = await rewritten_while_asked(
        tmp_path, era, "saip_tools_delete", description=description
    )
    assert said == changed("saip_tools_delete", asked, now, era)
    assert (await parts.studio.get("adder")).summary.revision == now


@pytest.mark.parametrize("era", ERAS)
async def test_an_exposure_approved_for_a_low_risk_tool_does_not_serve_its_risky_namesake(
    tmp_path: Path, era: str
) -> None:
    parts = fakes.studio()
    await parts.studio.publish("adder", await with_pass(parts))
    asked = (await parts.studio.check_risk("adder", "")).revision
    _, tools = area(parts)
    h = harness(tmp_path, others=[tools])
    republished: list[int] = []

    async def attack() -> None:
        await parts.studio.delete("adder", asked)
        await parts.studio.save_draft(text("adder", **OPEN), 0)
        await parts.studio.test("adder", "")
        await parts.studio.publish("adder")
        republished.append((await parts.studio.check_risk("adder", "")).revision)

    before = await parts.exposure.read()
    arguments = {"autoExpose": False, "tools": ["adder"]}
    said = await call(h, era, "saip_tools_set_exposure", arguments, meanwhile(attack, []))
    assert said == changed("saip_tools_set_exposure", asked, republished[0], era)
    assert await parts.exposure.read() == before


async def unasked(h: Harness, era: str, tool: str, arguments: dict[str, Any]) -> str:
    """What `tool` said to a call the person would approve, which must end before any question reaches them."""
    questions: list[str] = []

    async def nothing() -> None:
        return None

    said = await call(h, era, tool, arguments, meanwhile(nothing, questions))
    assert questions == []
    return said


@pytest.mark.parametrize("era", ERAS)
async def test_a_publish_the_service_would_refuse_is_refused_before_the_person_is_asked(
    tmp_path: Path, era: str
) -> None:
    parts = fakes.studio()
    await parts.studio.save_draft(text("adder"), 0)  # never tested: no Local Pass
    _, tools = area(parts)
    said = await unasked(harness(tmp_path, others=[tools]), era, "saip_tools_publish", {"name": "adder"})
    assert said == (
        "'adder' has no Local Pass for its current definition. Run saip_tools_test on it without arguments (its "
        "declared test values) until it passes, then publish."
    )
    assert (await parts.studio.get("adder")).summary.state == tools_pb2.TOOL_STATE_DRAFT


@pytest.mark.parametrize("era", ERAS)
async def test_a_delete_of_a_bundled_tool_is_refused_before_the_person_is_asked(tmp_path: Path, era: str) -> None:
    _, tools = area(fakes.studio(bundled={"counter": fakes.tool("counter")}))
    said = await unasked(harness(tmp_path, others=[tools]), era, "saip_tools_delete", {"name": "counter"})
    assert said.startswith("'counter' is a bundled tool, and bundled tools cannot be deleted. Copy its spec")
