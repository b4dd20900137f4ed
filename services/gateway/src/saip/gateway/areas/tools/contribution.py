"""The tools area: the saip_tools_* tools over Tool Studio, the tool-authoring guides, the examples, and the
saip_create_tool prompt. The handlers call the tools service (the same methods as /api/v1/tools and `saip tools`);
every rule is the service's, and its refusals come back as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import Field, field_validator

from saip.common import literals
from saip.common.words import plural
from saip.gateway.areas.tools import views
from saip.gateway.areas.tools.client import ToolsClient
from saip.gateway.errors import LiteralSecret, ServiceRefused, ServiceUnavailable
from saip.gateway.surface.declare import Declared, asking, prompt, template, tool
from saip.gateway.surface.expected import NOTHING, Expected, Read
from saip.gateway.surface.management import (
    MAX_INTEGER,
    Approval,
    Input,
    Level,
    ListedName,
    ManagementResource,
    ManagementResult,
)
from saip.v1 import tools_pb2

GUIDE = "saip://guide/tool-authoring"
# The guide's pages: the texts are files in guides/ beside this module; "examples" also lists the bundled tools.
GUIDE_PAGES = {
    "": ("Tool authoring", "From idea to published tool: the procedure, the rules you will meet, the refusals"),
    "runtime": ("Tool runtime", "The JavaScript runtime: globals, helpers, fetch, crypto, limits"),
    "sandbox": ("Tool sandbox", "The sandbox baseline, network modes, what raises the risk level and approval"),
    "testing": ("Testing tools", "The Local Pass: what it runs, what counts, what to do when it fails"),
    "mistakes": ("Tool authoring mistakes", "Frequent mistakes and the exact refusals they cause"),
    "examples": ("Tool examples", "The bundled tools to copy from, each at saip://examples/{name}"),
}


class NameInput(Input):
    name: str = Field(min_length=1, max_length=64, description="The tool's name (a slug).")


class ListInput(Input):
    includeBundled: bool = Field(
        default=False, description="Also list the bundled starter tools (read-only; served only when exposed)."
    )


def _references_only(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """A spec whose static variables or code hold a literal secret is refused before it leaves the gateway."""
    if spec is not None:
        variables = spec.get("staticVariables")
        refused = literals.spec_refusal(variables if isinstance(variables, dict) else {}, spec.get("code"))
        if refused is not None:
            raise LiteralSecret(refused)
    return spec


class CheckRiskInput(Input):
    name: str | None = Field(default=None, max_length=64, description="A saved tool to assess.")
    spec: dict[str, Any] | None = Field(default=None, description="Or a spec not saved yet (the tool JSON).")

    _references = field_validator("spec")(_references_only)


class SaveDraftInput(Input):
    spec: dict[str, Any] = Field(
        description=(
            "The tool as JSON: name, description, params [{name, description, type, required, testValue}], "
            "staticVariables, code (a JavaScript function body), sandbox {networkMode, hostsAllow}, "
            "humanInTheLoop {mode, promptTemplate}. Read saip://guide/tool-authoring first."
        )
    )
    expectedRevision: int = Field(
        default=0,
        ge=0,
        le=MAX_INTEGER,
        description="The revision you read (saip_tools_get); 0 creates, or updates the draft as is.",
    )

    _references = field_validator("spec")(_references_only)


class TestInput(NameInput):
    arguments: dict[str, Any] | None = Field(
        default=None,
        description="Values to try; leave out to run the Local Pass with the declared test values (needed to publish).",
    )


class ExposureInput(Input):
    autoExpose: bool = Field(description="Serve every newly published tool on /mcp.")
    tools: list[ListedName] = Field(
        default_factory=list,
        max_length=200,
        description="Also served: bundled tools, or published tools when autoExpose is false.",
    )
    expectedRevision: int = Field(
        default=0, ge=0, le=MAX_INTEGER, description="The revision you read; 0 for whatever it is now."
    )


# The risk level from which serving a tool is a high-risk action (the seed's gate table: L4 and above).
HIGH_RISK = 4


def exposure_summary(arguments: ExposureInput) -> str:
    auto = "serve every newly published tool" if arguments.autoExpose else "serve published tools only when listed"
    listed = ", ".join(arguments.tools) or "no others"
    return f"{auto}; also serve {listed}"


def read_of(report: tools_pb2.RiskReport) -> Read:
    """The tool a plan assessed, at the revision assessed: what its approval binds."""
    return Read(report.name, f"'{report.name}'", report.revision)


def guide_text(page: str) -> str:
    name = f"tool-authoring-{page}.md" if page else "tool-authoring.md"
    return resources.files("saip.gateway.areas.tools").joinpath("guides", name).read_text(encoding="utf-8")


class ToolsArea(Declared):
    category = "tools"

    def __init__(self, client: ToolsClient, taken: Callable[[], set[str]]) -> None:
        self.client = client
        # The tool names /mcp serves from sources other than the tools service (a publish must not shadow one).
        self._taken = taken

    def _taken_refusal(self, name: str) -> str:
        """Why a publish of `name` would shadow a tool another source serves on /mcp, or empty."""
        if name in self._taken():
            return f"'{name}' is already served on /mcp by another source; publish the tool under another name."
        return ""

    @tool(Level.READ, "List tools", verb="list", idempotent=True)
    async def list_tools(self, arguments: ListInput) -> ManagementResult:
        """The authored tools (drafts and published) with state, risk level, network mode, whether each is served on
        /mcp and whether it passed its Local Pass. includeBundled adds the bundled starter tools."""
        summaries = [views.summary(summary) for summary in await self.client.list_tools(arguments.includeBundled)]
        if not summaries:
            return ManagementResult(
                True, "No tools yet. Read saip://guide/tool-authoring, then saip_tools_save_draft.", data=[]
            )
        served = sum(1 for summary in summaries if summary["servedOnMcp"])
        words = ", ".join(f"{s['name']} ({s['state']}, {s['risk']})" for s in summaries[:20])
        counted = f"{plural(len(summaries), 'tool')}, {served} served on /mcp"
        return ManagementResult(True, f"{counted}: {words}.", data=summaries)

    @tool(Level.READ, "Get a tool", idempotent=True)
    async def get(self, arguments: NameInput) -> ManagementResult:
        """One tool's full spec (code included), state, revision, last Local Pass and risk. Read it before changing a
        draft, and pass its revision as expectedRevision to saip_tools_save_draft."""
        data = views.detail(await self.client.get(arguments.name))
        message = f"'{data['name']}' is {data['state']} ({data['risk']}), revision {data['revision']}."
        return ManagementResult(True, message, data=data)

    @tool(Level.READ, "Check a tool's risk", idempotent=True)
    async def check_risk(self, arguments: CheckRiskInput) -> ManagementResult:
        """The risk level a saved tool (name) or an unsaved spec (spec) would have, why, whether calls would ask the
        person, and any poisoning-scan hits in what the model reads. Changes nothing."""
        if (arguments.name is None) == (arguments.spec is None):
            raise ServiceRefused("Give either name (a saved tool) or spec (an unsaved one), not both and not neither.")
        report = await self.client.check_risk(name=arguments.name or "", spec=arguments.spec)
        view = views.risk(report)
        asks = "each call asks the person" if report.hitl_required else "calls run without asking"
        message = f"'{report.name}' is {view['risk']}: {'; '.join(report.reasons)}; {asks}."
        warnings = [f"Poisoning scan: {', '.join(report.poisoning_hits)}"] if report.poisoning_hits else []
        return ManagementResult(True, message, warnings=warnings, data=view)

    @tool(Level.READ, "Get tool exposure", idempotent=True)
    async def get_exposure(self) -> ManagementResult:
        """Which published tools /mcp serves: autoExpose (every newly published tool) and the explicit list."""
        exposure = await self.client.exposure()
        view = views.exposure(exposure)
        listed = ", ".join(view["tools"]) or "nothing else"
        auto = (
            "every newly published tool is served"
            if exposure.auto_expose
            else "published tools are served only when listed"
        )
        return ManagementResult(True, f"Exposure: {auto}; also served: {listed}.", data=view)

    async def plan_save(self, arguments: SaveDraftInput) -> Approval:
        report = await self.client.check_risk(spec=arguments.spec)
        return Approval(
            Level.WRITE,
            f"save the draft '{report.name}' (risk L{report.risk_level}, "
            f"{views.network_words(report.network_mode, report.hosts_allow)}); a draft is not served",
        )

    @tool(Level.WRITE, "Save a tool draft", planner=plan_save)
    async def save_draft(self, arguments: SaveDraftInput) -> ManagementResult:
        """Create a draft, or update a draft, from a tool spec. A draft is never served. Published tools are not
        changed by a draft of the same name. Literal secrets are refused: use ${NAME} references to tools.secrets."""
        reply = await self.client.save_draft(arguments.spec, arguments.expectedRevision)
        view = views.summary(reply.tool)
        verb = "Created" if reply.created else "Updated"
        message = (
            f"{verb} the draft '{view['name']}' (revision {view['revision']}, {view['risk']}). Next: saip_tools_test "
            "without arguments (its Local Pass), then saip_tools_publish."
        )
        return ManagementResult(True, message, persisted=True, warnings=list(reply.warnings), data=view)

    async def plan_test(self, arguments: TestInput) -> Approval:
        report = await self.client.check_risk(name=arguments.name)
        what = "with the given arguments" if arguments.arguments else "with its declared test values (its Local Pass)"
        return Approval(
            Level.WRITE,
            f"run '{report.name}' in the sandbox {what}: risk L{report.risk_level}, "
            f"{views.network_words(report.network_mode, report.hosts_allow)}",
            high_risk=report.above_baseline,
            expected=Expected.of(read_of(report)),
        )

    @tool(Level.WRITE, "Test a tool", planner=plan_test)
    async def test(self, arguments: TestInput, expected: Expected = NOTHING) -> ManagementResult:
        """Run a tool in the sandbox. Without arguments this is its Local Pass (the declared test values), the only
        way to make a draft publishable; with arguments it is a trial run that does not count."""
        # The revision the plan assessed (and asked about, when it asked) is the one that runs.
        report = await self.client.test(arguments.name, arguments.arguments, expected.revision(arguments.name, 0))
        if report.passed:
            kind = "Local Pass" if report.local_pass else "Trial run (not a Local Pass)"
            message = f"{kind} of '{report.name}' passed in {report.duration_ms} ms."
            if report.local_pass and report.published:
                message += " It is published already: /mcp serves this revision."
            elif report.local_pass:
                message += " It can be published with saip_tools_publish."
        else:
            message = f"'{report.name}' failed in the sandbox: {report.error}"
            if report.guard_blocks:
                message += " (refused by the sandbox: " + ", ".join(b.reason for b in report.guard_blocks) + ")"
        return ManagementResult(
            report.passed, message, persisted=report.local_pass, warnings=list(report.warnings), data=views.test(report)
        )

    async def plan_publish(self, arguments: NameInput) -> Approval:
        return self.publish_approval(await self.client.check_risk(name=arguments.name))

    def publish_approval(self, report: tools_pb2.RiskReport) -> Approval:
        """What publishing the assessed tool does, and at which risk (or why it is refused): the person's question."""
        asks = "each call asks the person" if report.hitl_required else "calls run without asking the person"
        summary = (
            f"publish '{report.name}' and serve it on /mcp: risk L{report.risk_level}, "
            f"{views.network_words(report.network_mode, report.hosts_allow)}, {asks}"
        )
        if report.weakens_approval:
            summary += " (human approval switched off above L0)"
        return Approval(
            Level.DESTRUCTIVE,
            summary,
            high_risk=report.above_baseline or report.weakens_approval,
            expected=Expected.of(read_of(report)),
            refused=self._taken_refusal(report.name) or report.publish_refused,
        )

    @tool(Level.DESTRUCTIVE, "Publish a tool", planner=plan_publish)
    async def publish(self, arguments: NameInput, expected: Expected = NOTHING) -> ManagementResult:
        """Publish a draft that passed its Local Pass: it is served on /mcp (when exposed) and clients get
        list_changed. A published tool is never overwritten; the person approves first."""
        if refusal := self._taken_refusal(arguments.name):
            raise ServiceRefused(refusal)
        summary = await self.client.publish(arguments.name, expected.revision(arguments.name, 0))
        if summary.exposed:
            message = f"Published '{summary.name}': it is served on /mcp now, and clients were told (list_changed)."
        else:
            message = (
                f"Published '{summary.name}'. It is not served yet: exposure is explicit, so add it with "
                "saip_tools_set_exposure."
            )
        return ManagementResult(True, message, persisted=True, data=views.summary(summary))

    async def plan_delete(self, arguments: NameInput) -> Approval:
        found = await self.client.get(arguments.name)
        state = views.STATES.get(found.summary.state, "tool")
        served = "; it leaves /mcp at once" if found.summary.exposed else ""
        name = found.summary.name
        return Approval(
            Level.DESTRUCTIVE,
            f"delete the {state} '{name}'{served}",
            expected=Expected.of(Read(name, f"'{name}'", found.summary.revision)),
            refused=found.delete_refused,
        )

    @tool(Level.DESTRUCTIVE, "Delete a tool", planner=plan_delete)
    async def delete(self, arguments: NameInput, expected: Expected = NOTHING) -> ManagementResult:
        """Delete a draft or a published tool (it leaves /mcp at once). Bundled and configured tools cannot be
        deleted. The person approves first."""
        reply = await self.client.delete(arguments.name, expected.revision(arguments.name, 0))
        state = views.STATES.get(reply.state, "tool")
        return ManagementResult(True, f"Deleted the {state} '{reply.name}'.", persisted=True, data={"name": reply.name})

    async def plan_exposure(self, arguments: ExposureInput) -> Approval:
        """Each listed tool's risk, read from the tools service: serving one at L4 or above is high risk (always
        asks, refused under `none`), and the summary names the tools that are."""
        reports = [await self.client.check_risk(name=name) for name in dict.fromkeys(arguments.tools)]
        risky = [f"'{report.name}' (L{report.risk_level})" for report in reports if report.risk_level >= HIGH_RISK]
        summary = exposure_summary(arguments)
        if risky:
            summary += f"; serves {', '.join(risky)} at risk L{HIGH_RISK} or above"
        expected = Expected.of(*(read_of(report) for report in reports))
        return Approval(Level.DESTRUCTIVE, summary, high_risk=bool(risky), expected=expected)

    @tool(Level.DESTRUCTIVE, "Set tool exposure", planner=plan_exposure)
    async def set_exposure(self, arguments: ExposureInput, expected: Expected = NOTHING) -> ManagementResult:
        """Choose what /mcp serves: autoExpose (every newly published tool) and an explicit list (bundled tools, or
        published ones when autoExpose is false). Drafts cannot be exposed. The person approves."""
        exposure = await self.client.set_exposure(
            arguments.autoExpose, arguments.tools, arguments.expectedRevision, expected.revisions(0)
        )
        message = "Exposure saved: " + exposure_summary(arguments) + "."
        return ManagementResult(True, message, persisted=True, data=views.exposure(exposure))

    # Guides, examples, prompt.

    def resources(self) -> list[ManagementResource]:
        """The guide's pages, one resource each (a table rather than declarations: their texts are files)."""
        found = []
        for page, (name, description) in GUIDE_PAGES.items():
            uri = f"{GUIDE}/{page}" if page else GUIDE
            read = self._examples_guide if page == "examples" else _static(page)
            found.append(ManagementResource(uri, name, description, read, mime_type="text/markdown"))
        return [*found, *super().resources()]

    async def _examples_guide(self) -> str:
        try:
            listed = await self.client.list_tools(include_bundled=True)
        except (ServiceRefused, ServiceUnavailable) as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        bundled = [summary for summary in listed if summary.source == tools_pb2.TOOL_SOURCE_BUNDLED]
        lines = [f"- `saip://examples/{s.name}`: {s.description}" for s in bundled]
        return guide_text("examples") + "\n## The bundled tools\n\n" + "\n".join(lines) + "\n"

    @template("saip://examples/{name}", "Bundled tool example", mime_type="application/json")
    async def example(self, variables: dict[str, str]) -> str:
        """The full spec (code included) of a bundled tool, to copy from; names in
        saip://guide/tool-authoring/examples."""
        name = variables.get("name", "")
        try:
            found = await self.client.get(name)
        except (ServiceRefused, ServiceUnavailable) as exc:
            # A resource read has no result envelope: the refusal becomes the protocol error's message.
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        if found.summary.source != tools_pb2.TOOL_SOURCE_BUNDLED:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"'{name}' is not a bundled example; saip://guide/tool-authoring/examples lists them.",
            )
        return found.spec_json

    @prompt(
        "saip_create_tool",
        arguments=[types.PromptArgument(name="goal", description="What the tool should do", required=False)],
    )
    async def create_tool(self, arguments: dict[str, str]) -> types.GetPromptResult:
        """Start authoring a tool: the procedure, with the tool-authoring guide attached."""
        goal = arguments.get("goal", "").strip()
        ask = f"Create a saip tool that does this: {goal}" if goal else "Create a saip tool for the task I describe."
        procedure = (
            f"{ask}\n\nFollow the attached guide: write the spec, save it with saip_tools_save_draft, run "
            "saip_tools_test without arguments until the Local Pass passes, then saip_tools_publish (the person "
            "approves at this client), then call the new tool. Never put a secret in the spec: use a ${NAME} "
            "reference and ask the person to add the secret to tools.secrets."
        )
        guide = types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri=GUIDE, text=guide_text(""), mime_type="text/markdown"),
        )
        return asking("Author, test and publish a tool", procedure, guide)


def _static(page: str) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return guide_text(page)

    return read
