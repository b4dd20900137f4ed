"""Approvals bind what they describe, in the expose and mcp-register areas: an exposure change is applied only to the
composition revision its question was planned on, with the definition hashes the question showed, and a server is
removed only as the question named it; a change elsewhere while the person reads the question is refused, in both
protocol eras, with nothing changed.

The tools service here is a hand-written fake of the areas' client that keeps a composition revision and refuses a
stale expectation with the sentence every service uses (`changed_since_asked`), as the tools service does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.approval_sentences import changed_since_asked
from saip.gateway.areas.expose.contribution import ExposeArea
from saip.gateway.areas.mcp_register.contribution import McpRegisterArea
from saip.gateway.errors import ServiceRefused, sentence
from saip.v1 import upstream_pb2 as pb
from tests.unit.gateway.probe import harness
from tests.unit.gateway.test_approvals_bind import ERAS, LEGACY, call, meanwhile

CHANGED_HASH = "c" * 64


POISONED_ALIAS = "notes_poisoned"


class Upstreams:
    """The upstream side of the tools service as the two areas call it: one server, its composition and a changed
    definition of `notes_echo` awaiting the person's acceptance."""

    def __init__(self) -> None:
        self.revision = 3
        self.server = pb.Server(id="notes", transport=pb.TRANSPORT_STREAMABLE_HTTP, url="http://notes.test/mcp")
        self.server.revision = 7
        self.applied: list[pb.ApplyExposureRequest] = []
        self.removed: list[str] = []

    async def plan(self, change: pb.ExposureChange) -> pb.ExposurePlan:
        plan = pb.ExposurePlan(revision=self.revision, cap=3)
        for member in change.add:
            plan.added.add(
                name=member.alias or member.tool, member=member, effective_level=1, without_approval=not member.hitl
            )
        for alias in change.acknowledge_changed:
            hits = ["exfiltration", "tool-redirect"] if alias == POISONED_ALIAS else []
            plan.acknowledged.add(
                name=alias, server_id="notes", tool="echo", new_hash=CHANGED_HASH, diff="description", poisoning=hits
            )
        return plan

    async def apply(self, change: pb.ExposureChange, acknowledged_hashes: dict[str, str]) -> pb.ExposureApplied:
        if change.expected_revision and change.expected_revision != self.revision:
            raise ServiceRefused(changed_since_asked("the exposure", change.expected_revision, self.revision) + ".")
        self.applied.append(pb.ApplyExposureRequest(change=change, acknowledged_hashes=acknowledged_hashes))
        self.revision += 1
        return pb.ExposureApplied(plan=await self.plan(change), composition=pb.CompositionView(revision=self.revision))

    async def servers(self) -> list[pb.UpstreamStatus]:
        return [pb.UpstreamStatus(server=self.server, state=pb.CONNECTION_STATE_CONNECTED)]

    async def remove(self, server_id: str, expected_revision: int = 0) -> pb.RemoveServerReply:
        if expected_revision and expected_revision != self.server.revision:
            what = f"the server '{server_id}'"
            raise ServiceRefused(changed_since_asked(what, expected_revision, self.server.revision) + ".")
        self.removed.append(server_id)
        return pb.RemoveServerReply(server_id=server_id)


def refusal(tool: str, what: str, asked: int, now: int, era: str) -> str:
    """2025-11-25: the service refuses the stale expectation; 2026-07-28: the retry's plan reads another revision
    than the one sealed in the question, and the gate refuses before anything runs."""
    said = changed_since_asked(what, asked, now)
    return sentence(said) if era == LEGACY else f"Tool '{tool}' was not run: {said}."


@pytest.mark.parametrize("era", ERAS)
async def test_an_exposure_approved_on_one_composition_is_not_applied_to_the_next(tmp_path: Path, era: str) -> None:
    upstreams = Upstreams()
    h = harness(tmp_path, others=[ExposeArea(upstreams, set)])  # type: ignore[arg-type]

    async def elsewhere() -> None:  # the person's REST call, another AI's change: the composition moves on
        upstreams.revision += 1

    questions: list[str] = []
    arguments = {"tools": [{"serverId": "notes", "tool": "echo", "hitl": False}]}
    said = await call(h, era, "saip_expose_add_tools", arguments, meanwhile(elsewhere, questions))
    assert "serve on /mcp 'echo' (notes/echo, L1); echo will have no human approval" in questions[0]
    assert said == refusal("saip_expose_add_tools", "the exposure", 3, 4, era)
    assert upstreams.applied == []


async def test_an_approved_exposure_is_applied_with_the_revision_and_hashes_its_question_read(
    tmp_path: Path,
) -> None:
    upstreams = Upstreams()
    h = harness(tmp_path, others=[ExposeArea(upstreams, set)])  # type: ignore[arg-type]

    async def nothing() -> None:
        return None

    questions: list[str] = []
    arguments = {"acknowledgeChanged": ["notes_echo"]}
    said = await call(h, LEGACY, "saip_expose_apply", arguments, meanwhile(nothing, questions))
    assert said.startswith("Applied: Accept new definition of 'notes_echo'")
    assert f"hash {CHANGED_HASH[:12]}" in questions[0]
    [applied] = upstreams.applied
    assert applied.change.expected_revision == 3 and dict(applied.acknowledged_hashes) == {"notes_echo": CHANGED_HASH}


async def test_the_question_to_accept_a_poisoned_definition_says_what_the_scan_found(tmp_path: Path) -> None:
    h = harness(tmp_path, others=[ExposeArea(Upstreams(), set)])  # type: ignore[arg-type]

    async def nothing() -> None:
        return None

    questions: list[str] = []
    await call(h, LEGACY, "saip_expose_apply", {"acknowledgeChanged": [POISONED_ALIAS]}, meanwhile(nothing, questions))
    assert (
        f"Accept new definition of '{POISONED_ALIAS}' (notes/echo, hash {CHANGED_HASH[:12]}): description (it trips "
        "the poisoning scan: exfiltration, tool-redirect; accepted, it asks the person before every call)"
    ) in questions[0]


@pytest.mark.parametrize("era", ERAS)
async def test_a_removal_approved_for_one_server_does_not_remove_it_once_changed(tmp_path: Path, era: str) -> None:
    upstreams = Upstreams()
    h = harness(tmp_path, others=[McpRegisterArea(upstreams)])  # type: ignore[arg-type]

    async def repointed() -> None:  # the server is redefined (another URL) while the person reads the question
        upstreams.server.url = "http://elsewhere.test/mcp"
        upstreams.server.revision = 8

    questions: list[str] = []
    said = await call(h, era, "saip_mcp_remove_server", {"serverId": "notes"}, meanwhile(repointed, questions))
    assert "remove the upstream server 'notes' (streamable-http at http://notes.test/mcp)" in questions[0]
    assert said == refusal("saip_mcp_remove_server", "the server 'notes'", 7, 8, era)
    assert upstreams.removed == []
