"""The expose area: which upstream tools saip serves on its /mcp (saip_expose_get, _preview, _add_tools,
_remove_tools, _set_hitl, _apply), `saip://status/exposure`, the guides `saip://guide/proxy` and
`saip://guide/risk-levels`, and the saip_proxy_server prompt.

Every change is planned by the tools service first (the same dry run `saip_expose_preview` shows): a refusal (the
cap, a reserved or taken name, a poisoning hit without HITL) is the answer before anything is asked, and the
question says what is added, which tools will have no human approval, and, for `acknowledgeChanged`, "Accept new
definition" with the diff and the hash the person accepts. The approval binds what the plan read (`Expected`): the
composition's revision and each accepted definition's hash. The handler passes them to the service, which applies
only to that revision (ABORTED otherwise: a change meanwhile is not approved by an answer to the question before it)
and accepts a definition only while it still has that hash; the 2026-07-28 retry plans again and is refused by the
gate when either moved. An AI that passes `acknowledgedHashes` (the `newHash` its preview showed) is refused at the
plan when the definition changed again since its preview.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources

import mcp_types as types
from pydantic import Field

from saip.common.words import plural
from saip.gateway.areas.expose import views
from saip.gateway.areas.mcp.client import UpstreamClient
from saip.gateway.errors import ServiceRefused
from saip.gateway.surface.declare import Declared, asking, prompt, resource, tool
from saip.gateway.surface.expected import NOTHING, Expected, Read
from saip.gateway.surface.management import MAX_INTEGER, Approval, Input, Level, ListedName, ManagementResult
from saip.v1 import upstream_pb2 as pb

PROXY_GUIDE = "saip://guide/proxy"
RISK_GUIDE = "saip://guide/risk-levels"
# Said of a changed definition the poisoning scan flags, in the plan and in the person's question.
POISONED = "it trips the poisoning scan: {hits}; accepted, it asks the person before every call"
Name = Field(min_length=1, max_length=64, description="The tool's name on /mcp (its alias, or its upstream name).")


class MemberInput(Input):
    serverId: str = Field(min_length=1, max_length=63, description="The upstream server's id.")
    tool: str = Field(min_length=1, max_length=200, description="The tool's name on the upstream.")
    alias: str = Field(default="", max_length=64, description="Its name on /mcp (the upstream name when empty).")
    hitl: bool = Field(default=True, description="Ask the person before every call (lowers its level one band).")

    def proto(self) -> pb.Member:
        return pb.Member(server_id=self.serverId, tool=self.tool, alias=self.alias, hitl=self.hitl)


class HitlInput(Input):
    name: str = Name
    hitl: bool = Field(description="Ask the person before every call.")


COMPOSITION, DEFINITION = "exposure", "#definition"


def described(plan: pb.ExposurePlan) -> Expected:
    """What a change's question describes: the composition's revision and each definition it accepts."""
    accepted = [
        Read(ack.name + DEFINITION, f"the new definition of '{ack.name}'", ack.new_hash) for ack in plan.acknowledged
    ]
    return Expected.of(Read(COMPOSITION, "the exposure", plan.revision), *accepted)


def accepted_hashes(expected: Expected) -> dict[str, str]:
    """The hash of each definition the question showed: what the service is asked to accept, and nothing newer."""
    reads = expected.revisions("").items()
    return {subject.removesuffix(DEFINITION): found for subject, found in reads if subject.endswith(DEFINITION)}


class Change(Input):
    """A change of the composition, bound to the revision the AI read or, without one, to the one its plan read."""

    expectedRevision: int = Field(
        default=0, ge=0, le=MAX_INTEGER, description="The revision you read (saip_expose_get); 0 for any."
    )

    def change(self, expected: Expected = NOTHING) -> pb.ExposureChange:
        return pb.ExposureChange(expected_revision=self.expectedRevision or expected.revision(COMPOSITION, 0))


class AddToolsInput(Change):
    tools: list[MemberInput] = Field(min_length=1, max_length=50, description="The upstream tools to serve.")

    def change(self, expected: Expected = NOTHING) -> pb.ExposureChange:
        found = super().change(expected)
        found.add.extend(member.proto() for member in self.tools)
        return found


class RemoveToolsInput(Change):
    names: list[ListedName] = Field(min_length=1, max_length=50, description="The names on /mcp to stop serving.")

    def change(self, expected: Expected = NOTHING) -> pb.ExposureChange:
        found = super().change(expected)
        found.remove.extend(self.names)
        return found


class SetHitlInput(Change):
    name: str = Name
    hitl: bool = Field(description="Ask the person before every call.")

    def change(self, expected: Expected = NOTHING) -> pb.ExposureChange:
        found = super().change(expected)
        found.set_hitl.add(alias=self.name, hitl=self.hitl)
        return found


class ApplyInput(Change):
    add: list[MemberInput] = Field(default_factory=list, max_length=50, description="Upstream tools to serve.")
    remove: list[ListedName] = Field(default_factory=list, max_length=50, description="Names on /mcp to stop serving.")
    setHitl: list[HitlInput] = Field(default_factory=list, max_length=50, description="HITL changes.")
    acknowledgeChanged: list[ListedName] = Field(
        default_factory=list,
        max_length=50,
        description="Names whose changed upstream definition you reviewed (saip_expose_preview shows the diff); the "
        "person is asked to accept each new definition.",
    )
    acknowledgedHashes: dict[ListedName, ListedName] = Field(
        default_factory=dict,
        max_length=50,
        description="Optional: for each acknowledged name, the newHash saip_expose_preview showed; the change is "
        "refused if the upstream changed the definition again since.",
    )

    def change(self, expected: Expected = NOTHING) -> pb.ExposureChange:
        found = super().change(expected)
        found.add.extend(member.proto() for member in self.add)
        found.remove.extend(self.remove)
        for setting in self.setHitl:
            found.set_hitl.add(alias=setting.name, hitl=setting.hitl)
        found.acknowledge_changed.extend(self.acknowledgeChanged)
        return found


def summary(plan: pb.ExposurePlan) -> str:
    """What the person approves: each part of the change, the tools that will run without asking, and each
    definition to accept with its diff and hash."""
    parts = []
    if plan.added:
        added = ", ".join(
            f"'{entry.name}' ({entry.member.server_id}/{entry.member.tool}, L{entry.effective_level}"
            f"{', asks the person' if not entry.without_approval else ''})"
            for entry in plan.added
        )
        parts.append(f"serve on /mcp {added}")
        unasked = [entry.name for entry in plan.added if entry.without_approval]
        parts.append(
            f"{', '.join(unasked)} will have no human approval" if unasked else "every added tool asks the person"
        )
    if plan.removed:
        parts.append(f"stop serving {', '.join(plan.removed)}")
    for entry in plan.hitl_changed:
        asks = "asks the person before every call" if not entry.without_approval else "runs without human approval"
        parts.append(f"'{entry.name}' then {asks} (L{entry.effective_level})")
    parts.extend(
        f"Accept new definition of '{ack.name}' ({ack.server_id}/{ack.tool}, hash {ack.new_hash[:12]}): {ack.diff}"
        + (f" ({POISONED.format(hits=', '.join(ack.poisoning))})" if ack.poisoning else "")
        for ack in plan.acknowledged
    )
    return "; ".join(parts) or "change nothing"


def refusals(plan: pb.ExposurePlan) -> str:
    """Each refused name and why, in one sentence (the reasons are clauses)."""
    return "; ".join(f"{refusal.name}: {refusal.reason}" for refusal in plan.refused)


def _refuse_an_empty_change(arguments: Change) -> None:
    """An apply with nothing in it is refused before anyone is asked to approve it (or clients are told of it)."""
    change = arguments.change()
    if not (change.add or change.remove or change.set_hitl or change.acknowledge_changed):
        raise ServiceRefused(
            "Nothing to change: give add, remove, setHitl or acknowledgeChanged (saip_expose_preview shows what a "
            "change would do)."
        )


def guide_text(name: str) -> str:
    return resources.files("saip.gateway.areas.expose").joinpath("guides", name).read_text(encoding="utf-8")


class ExposeArea(Declared):
    category = "expose"

    def __init__(self, client: UpstreamClient, taken: Callable[[], set[str]]) -> None:
        self.client = client
        # The names /mcp serves from other sources (management and published tools): an alias must not shadow one.
        self._taken = taken

    async def _plan(self, arguments: Change) -> pb.ExposurePlan:
        change = arguments.change()
        change.taken.extend(sorted(self._taken()))
        return await self.client.plan(change)

    @tool(Level.READ, "Get the exposed upstream tools", idempotent=True)
    async def get(self) -> ManagementResult:
        """The upstream tools composed onto /mcp: name, server and tool, HITL, inherent and effective risk, whether
        each is served now (or why it is withheld: a changed definition awaiting re-review, a server removed), its
        fingerprint state and whether its upstream is connected; the cap and the revision."""
        view = views.composition(await self.client.composition())
        served = [tool["name"] for tool in view["tools"] if tool["served"]]
        withheld = [f"{tool['name']} ({tool['withheld']})" for tool in view["tools"] if not tool["served"]]
        message = f"{plural(len(served), 'exposed tool')} served: {', '.join(served) or 'none'}"
        if withheld:
            message += f"; withheld: {'; '.join(withheld)}"
        return ManagementResult(True, message + ".", data=view)

    @tool(Level.READ, "Preview an exposure change", idempotent=True)
    async def preview(self, arguments: ApplyInput) -> ManagementResult:
        """The dry run of saip_expose_apply with the same arguments: what would be added and under which names,
        which tools would have no human approval, which are refused and why, and for acknowledgeChanged the diff of
        each changed definition. Changes nothing."""
        plan = await self._plan(arguments)
        view = views.plan(plan)
        message = f"Plan: {summary(plan)}." + (f" Refused: {refusals(plan)}." if plan.refused else "")
        return ManagementResult(True, message, data=view)

    async def plan_change(self, arguments: Change) -> Approval:
        _refuse_an_empty_change(arguments)
        plan = await self._plan(arguments)
        if plan.refused:
            raise ServiceRefused(refusals(plan) + ".")
        given = arguments.acknowledgedHashes if isinstance(arguments, ApplyInput) else {}
        moved = [ack.name for ack in plan.acknowledged if given.get(ack.name, ack.new_hash) != ack.new_hash]
        if moved:
            raise ServiceRefused(
                f"The upstream changed the definition of {', '.join(moved)} again since your preview; call "
                "saip_expose_preview again and review the new diff."
            )
        return Approval(Level.DESTRUCTIVE, summary(plan), high_risk=plan.high_risk, expected=described(plan))

    async def _apply(self, arguments: Change, expected: Expected) -> ManagementResult:
        _refuse_an_empty_change(arguments)
        applied = await self.client.apply(arguments.change(expected), accepted_hashes(expected))
        view = {"plan": views.plan(applied.plan), "composition": views.composition(applied.composition)}
        served = [tool["name"] for tool in view["composition"]["tools"] if tool["served"]]
        message = (
            f"Applied: {summary(applied.plan)}. /mcp serves {', '.join(served) or 'no upstream tools'} now (clients "
            "were told: list_changed)."
        )
        return ManagementResult(True, message, persisted=True, data=view)

    @tool(Level.DESTRUCTIVE, "Expose upstream tools", planner=plan_change)
    async def add_tools(self, arguments: AddToolsInput, expected: Expected = NOTHING) -> ManagementResult:
        """Serve upstream tools on /mcp, each under its name or an alias, with HITL (default on) or without.
        Refused: a tool above the cap (L3 by default; HITL does not lift it), a name starting with saip_ or served
        already. A tool whose description trips the poisoning scan always asks. The person approves first."""
        return await self._apply(arguments, expected)

    @tool(Level.DESTRUCTIVE, "Stop exposing upstream tools", planner=plan_change)
    async def remove_tools(self, arguments: RemoveToolsInput, expected: Expected = NOTHING) -> ManagementResult:
        """Stop serving exposed upstream tools (they leave /mcp at once). The person approves first."""
        return await self._apply(arguments, expected)

    @tool(Level.DESTRUCTIVE, "Set an exposed tool's HITL", planner=plan_change)
    async def set_hitl(self, arguments: SetHitlInput, expected: Expected = NOTHING) -> ManagementResult:
        """Switch the human approval of one exposed tool on or off (never off for a poisoning hit)."""
        return await self._apply(arguments, expected)

    @tool(Level.DESTRUCTIVE, "Apply an exposure change", planner=plan_change)
    async def apply(self, arguments: ApplyInput, expected: Expected = NOTHING) -> ManagementResult:
        """Add, remove, switch HITL and acknowledge changed definitions in one change (saip_expose_preview first).
        A tool whose upstream definition changed is withheld until it is listed in acknowledgeChanged here and the
        person clicks Accept new definition; a second change meanwhile is not accepted by that answer."""
        return await self._apply(arguments, expected)

    @resource("saip://status/exposure", "Exposed tools status", mime_type="application/json")
    async def status_json(self) -> str:
        """The exposed upstream tools with HITL, fingerprint state and whether the upstream is connected; JSON, fresh
        on every read."""
        return json.dumps(views.composition(await self.client.composition()), indent=2, sort_keys=True)

    @resource(PROXY_GUIDE, "Proxy guide")
    async def proxy_guide(self) -> str:
        """Choosing and combining upstream tools: register, preview the risk, expose with HITL, call through saip,
        and what to do when a definition changes. Read it before the saip_mcp_* and saip_expose_* tools."""
        return guide_text("proxy.md")

    @resource(RISK_GUIDE, "Risk levels")
    async def risk_guide(self) -> str:
        """What L0 to L5 mean for upstream servers and exposed tools, how they are scored, the floors and the cap."""
        return guide_text("risk-levels.md")

    @prompt(
        "saip_proxy_server",
        arguments=[types.PromptArgument(name="goal", description="What the upstream tools are for", required=False)],
    )
    async def proxy_server(self, arguments: dict[str, str]) -> types.GetPromptResult:
        """Start proxying an upstream MCP server through saip: read the guide first, then register, preview, expose."""
        goal = arguments.get("goal", "").strip()
        ask = (
            f"Make these tools available through saip: {goal}" if goal else "Proxy an upstream MCP server through saip."
        )
        text = (
            f"{ask}\n\nRead {PROXY_GUIDE} and {RISK_GUIDE} first. Then find the server (saip_mcp_catalog_search), "
            "register it (saip_mcp_add_from_catalog or saip_mcp_add_custom; the person approves), check "
            "saip_mcp_server_tools, preview the exposure (saip_expose_preview) and apply it (saip_expose_add_tools; "
            "the person approves). Never put a secret in a header or variable: use a ${ENV_NAME} reference and ask "
            "the person to set it."
        )
        return asking("Proxy an upstream MCP server", text)
