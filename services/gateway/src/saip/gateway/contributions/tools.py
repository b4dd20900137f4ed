"""The tools area: the saip_tools_* tools over Tool Studio, the tool-authoring guides, the examples, and the
saip_create_tool prompt. The handlers call the tools service (the same methods as /api/v1/tools and `saip tools`);
every rule is the service's, and its refusals come back as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from importlib import resources
from typing import Any

import mcp_types as types
from google.protobuf.timestamp_pb2 import Timestamp
from mcp.shared.exceptions import MCPError
from pydantic import Field

from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.gateway.management import (
    Approval,
    Input,
    Level,
    ManagementPrompt,
    ManagementResource,
    ManagementResourceTemplate,
    ManagementResult,
    ManagementTool,
    NoInput,
)
from saip.gateway.published import SOURCE_PREFIX
from saip.gateway.registry import Registry
from saip.gateway.tools_client import ToolsClient
from saip.v1 import tools_pb2

CATEGORY = "tools"
PUBLISHED_SOURCE = SOURCE_PREFIX + "tools"
GUIDE = "saip://guide/tool-authoring"
GUIDE_PAGES = {
    "": ("Tool authoring", "From idea to published tool: the procedure, the rules you will meet, the refusals"),
    "runtime": ("Tool runtime", "The JavaScript runtime: globals, helpers, fetch, crypto, limits"),
    "sandbox": ("Tool sandbox", "The sandbox baseline, network modes, what raises the risk level and approval"),
    "testing": ("Testing tools", "The Local Pass: what it runs, what counts, what to do when it fails"),
    "mistakes": ("Tool authoring mistakes", "Frequent mistakes and the exact refusals they cause"),
    "examples": ("Tool examples", "The bundled tools to copy from, each at saip://examples/{name}"),
}
STATES = {
    tools_pb2.TOOL_STATE_DRAFT: "draft",
    tools_pb2.TOOL_STATE_PUBLISHED: "published",
    tools_pb2.TOOL_STATE_MISSING_REQUIREMENTS: "missing-requirements",
}
SOURCES = {
    tools_pb2.TOOL_SOURCE_AUTHORED: "authored",
    tools_pb2.TOOL_SOURCE_BUNDLED: "bundled",
    tools_pb2.TOOL_SOURCE_CONFIGURATION: "configuration",
}


class NameInput(Input):
    name: str = Field(min_length=1, max_length=64, description="The tool's name (a slug).")


class ListInput(Input):
    includeBundled: bool = Field(
        default=False, description="Also list the bundled starter tools (read-only; served only when exposed)."
    )


class CheckRiskInput(Input):
    name: str | None = Field(default=None, max_length=64, description="A saved tool to assess.")
    spec: dict[str, Any] | None = Field(default=None, description="Or a spec not saved yet (the tool JSON).")


class SaveDraftInput(Input):
    spec: dict[str, Any] = Field(
        description=(
            "The tool as JSON: name, description, params [{name, description, type, required, testValue}], "
            "staticVariables, code (a JavaScript function body), sandbox {networkMode, hostsAllow}, "
            "humanInTheLoop {mode, promptTemplate}. Read saip://guide/tool-authoring first."
        )
    )
    expectedRevision: int = Field(
        default=0, ge=0, description="The revision you read (saip_tools_get); 0 creates, or updates the draft as is."
    )


class TestInput(NameInput):
    arguments: dict[str, Any] | None = Field(
        default=None,
        description="Values to try; leave out to run the Local Pass with the declared test values (needed to publish).",
    )


class ExposureInput(Input):
    autoExpose: bool = Field(description="Serve every newly published tool on /mcp.")
    tools: list[str] = Field(
        default_factory=list,
        max_length=200,
        description="Also served: bundled tools, or published tools when autoExpose is false.",
    )
    expectedRevision: int = Field(default=0, ge=0, description="The revision you read; 0 for whatever it is now.")


def timestamp(stamp: Timestamp) -> str | None:
    return stamp.ToJsonString() if stamp.seconds or stamp.nanos else None


def summary_view(summary: tools_pb2.ToolSummary) -> dict[str, Any]:
    view: dict[str, Any] = {
        "name": summary.name,
        "description": summary.description,
        "state": STATES.get(summary.state, "unknown"),
        "source": SOURCES.get(summary.source, "unknown"),
        "risk": f"L{summary.risk_level}",
        "network": {"mode": summary.network_mode, "hosts": list(summary.hosts_allow)},
        "asksPerson": summary.hitl_required,
        "servedOnMcp": summary.exposed,
        "tested": summary.tested,
        "missingEnv": list(summary.missing_env),
        "revision": summary.revision,
        "createdAt": timestamp(summary.created_at),
        "updatedAt": timestamp(summary.updated_at),
    }
    if summary.configuration_key:
        view["configurationKey"] = summary.configuration_key
    return view


def risk_view(report: tools_pb2.RiskReport) -> dict[str, Any]:
    return {
        "name": report.name,
        "risk": f"L{report.risk_level}",
        "reasons": list(report.reasons),
        "network": {"mode": report.network_mode, "hosts": list(report.hosts_allow)},
        "asksPerson": report.hitl_required,
        "aboveBaseline": report.above_baseline,
        "weakensApproval": report.weakens_approval,
        "poisoningHits": list(report.poisoning_hits),
        "state": STATES.get(report.state),
        "tested": report.tested,
    }


def test_view(report: tools_pb2.TestReport) -> dict[str, Any]:
    result: Any = json.loads(report.result_json) if report.result_json else None
    return {
        "name": report.name,
        "passed": report.passed,
        "localPass": report.local_pass,
        "result": result,
        "error": report.error or None,
        "console": list(report.console),
        "durationMs": report.duration_ms,
        "guardBlocks": [{"reason": block.reason, "message": block.message} for block in report.guard_blocks],
    }


def exposure_view(exposure: tools_pb2.Exposure) -> dict[str, Any]:
    return {"autoExpose": exposure.auto_expose, "tools": list(exposure.tools), "revision": exposure.revision}


def network_words(mode: str, hosts: Sequence[str]) -> str:
    return f"network {mode}" + (f" ({', '.join(hosts)})" if hosts else "")


def guide_text(page: str) -> str:
    name = f"tool-authoring-{page}.md" if page else "tool-authoring.md"
    return resources.files("saip.gateway").joinpath("guides", name).read_text(encoding="utf-8")


class ToolsContribution:
    category = CATEGORY

    def __init__(self, client: ToolsClient, taken: Callable[[], set[str]]) -> None:
        self.client = client
        # The tool names /mcp serves from sources other than the tools service (a publish must not shadow one).
        self._taken = taken

    def tools(self) -> Sequence[ManagementTool]:
        def tool(name: str, title: str, description: str, **options: Any) -> ManagementTool:
            return ManagementTool(name=name, category=self.category, title=title, description=description, **options)

        return [
            tool(
                "saip_tools_list",
                "List tools",
                "The authored tools (drafts and published) with state, risk level, network mode, whether each is "
                "served on /mcp and whether it passed its Local Pass. includeBundled adds the bundled starter tools.",
                input_model=ListInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.list_tools(arguments),
                idempotent=True,
            ),
            tool(
                "saip_tools_get",
                "Get a tool",
                "One tool's full spec (code included), state, revision, last Local Pass and risk. Read it before "
                "changing a draft, and pass its revision as expectedRevision to saip_tools_save_draft.",
                input_model=NameInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.get(arguments),
                idempotent=True,
            ),
            tool(
                "saip_tools_check_risk",
                "Check a tool's risk",
                "The risk level a saved tool (name) or an unsaved spec (spec) would have, why, whether calls would "
                "ask the person, and any poisoning-scan hits in what the model reads. Changes nothing.",
                input_model=CheckRiskInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.check_risk(arguments),
                idempotent=True,
            ),
            tool(
                "saip_tools_get_exposure",
                "Get tool exposure",
                "Which published tools /mcp serves: autoExpose (every newly published tool) and the explicit list.",
                input_model=NoInput,
                level=Level.READ,
                handler=lambda arguments, caller: self.get_exposure(),
                idempotent=True,
            ),
            tool(
                "saip_tools_save_draft",
                "Save a tool draft",
                "Create a draft, or update a draft, from a tool spec. A draft is never served. Published tools are "
                "not changed by a draft of the same name. Literal secrets are refused: use ${ENV_NAME} references.",
                input_model=SaveDraftInput,
                level=Level.WRITE,
                handler=lambda arguments, caller: self.save_draft(arguments),
                planner=self.plan_save,
            ),
            tool(
                "saip_tools_test",
                "Test a tool",
                "Run a tool in the sandbox. Without arguments this is its Local Pass (the declared test values), the "
                "only way to make a draft publishable; with arguments it is a trial run that does not count.",
                input_model=TestInput,
                level=Level.WRITE,
                handler=lambda arguments, caller: self.test(arguments),
                planner=self.plan_test,
            ),
            tool(
                "saip_tools_publish",
                "Publish a tool",
                "Publish a draft that passed its Local Pass: it is served on /mcp (when exposed) and clients get "
                "list_changed. A published tool is never overwritten; the person approves first.",
                input_model=NameInput,
                level=Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.publish(arguments),
                planner=self.plan_publish,
            ),
            tool(
                "saip_tools_delete",
                "Delete a tool",
                "Delete a draft or a published tool (it leaves /mcp at once). Bundled and configured tools cannot be "
                "deleted. The person approves first.",
                input_model=NameInput,
                level=Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.delete(arguments),
                planner=self.plan_delete,
            ),
            tool(
                "saip_tools_set_exposure",
                "Set tool exposure",
                "Choose what /mcp serves: autoExpose (every newly published tool) and an explicit list (bundled "
                "tools, or published ones when autoExpose is false). Drafts cannot be exposed. The person approves.",
                input_model=ExposureInput,
                level=Level.DESTRUCTIVE,
                handler=lambda arguments, caller: self.set_exposure(arguments),
                summary=lambda arguments: exposure_summary(arguments),
            ),
        ]

    def resources(self) -> Sequence[ManagementResource]:
        found = []
        for page, (name, description) in GUIDE_PAGES.items():
            uri = f"{GUIDE}/{page}" if page else GUIDE
            read = self._examples_guide if page == "examples" else _static(page)
            found.append(ManagementResource(uri, name, description, read, mime_type="text/markdown"))
        return found

    def resource_templates(self) -> Sequence[ManagementResourceTemplate]:
        return [
            ManagementResourceTemplate(
                uri_template="saip://examples/{name}",
                name="Bundled tool example",
                description="The full spec (code included) of a bundled tool, to copy from; names in "
                "saip://guide/tool-authoring/examples.",
                read=self._example,
                mime_type="application/json",
            )
        ]

    def prompts(self) -> Sequence[ManagementPrompt]:
        return [
            ManagementPrompt(
                name="saip_create_tool",
                description="Start authoring a tool: the procedure, with the tool-authoring guide attached.",
                render=self._create_tool_prompt,
                arguments=[
                    types.PromptArgument(name="goal", description="What the tool should do", required=False),
                ],
            )
        ]

    # The methods the tools, the REST API and the command line share.

    async def list_tools(self, arguments: ListInput) -> ManagementResult:
        summaries = [summary_view(summary) for summary in await self.client.list_tools(arguments.includeBundled)]
        if not summaries:
            return ManagementResult(
                True, "No tools yet. Read saip://guide/tool-authoring, then saip_tools_save_draft.", data=[]
            )
        served = sum(1 for summary in summaries if summary["servedOnMcp"])
        words = ", ".join(f"{s['name']} ({s['state']}, {s['risk']})" for s in summaries[:20])
        return ManagementResult(True, f"{len(summaries)} tools, {served} served on /mcp: {words}.", data=summaries)

    async def get(self, arguments: NameInput) -> ManagementResult:
        detail = await self.client.get(arguments.name)
        summary = summary_view(detail.summary)
        data = {
            **summary,
            "spec": json.loads(detail.spec_json),
            "lastTest": {
                "passed": detail.last_test.passed,
                "at": timestamp(detail.last_test.at),
                "error": detail.last_test.error or None,
            }
            if detail.last_test.spec_sha256
            else None,
            "poisoningHits": list(detail.poisoning_hits),
        }
        message = f"'{summary['name']}' is {summary['state']} ({summary['risk']}), revision {summary['revision']}."
        return ManagementResult(True, message, data=data)

    async def check_risk(self, arguments: CheckRiskInput) -> ManagementResult:
        if (arguments.name is None) == (arguments.spec is None):
            raise ServiceRefused("Give either name (a saved tool) or spec (an unsaved one), not both and not neither.")
        report = await self.client.check_risk(name=arguments.name or "", spec=arguments.spec)
        view = risk_view(report)
        asks = "each call asks the person" if report.hitl_required else "calls run without asking"
        message = f"'{report.name}' is {view['risk']}: {'; '.join(report.reasons)}; {asks}."
        warnings = [f"Poisoning scan: {', '.join(report.poisoning_hits)}"] if report.poisoning_hits else []
        return ManagementResult(True, message, warnings=warnings, data=view)

    async def get_exposure(self) -> ManagementResult:
        exposure = await self.client.exposure()
        view = exposure_view(exposure)
        listed = ", ".join(view["tools"]) or "nothing else"
        auto = (
            "every newly published tool is served"
            if exposure.auto_expose
            else "published tools are served only when listed"
        )
        return ManagementResult(True, f"Exposure: {auto}; also served: {listed}.", data=view)

    async def save_draft(self, arguments: SaveDraftInput) -> ManagementResult:
        reply = await self.client.save_draft(arguments.spec, arguments.expectedRevision)
        view = summary_view(reply.tool)
        verb = "Created" if reply.created else "Updated"
        message = (
            f"{verb} the draft '{view['name']}' (revision {view['revision']}, {view['risk']}). Next: saip_tools_test "
            "without arguments (its Local Pass), then saip_tools_publish."
        )
        return ManagementResult(True, message, persisted=True, warnings=list(reply.warnings), data=view)

    async def test(self, arguments: TestInput) -> ManagementResult:
        report = await self.client.test(arguments.name, arguments.arguments)
        view = test_view(report)
        if report.passed:
            kind = "Local Pass" if report.local_pass else "Trial run (not a Local Pass)"
            message = f"{kind} of '{report.name}' passed in {report.duration_ms} ms."
            if report.local_pass:
                message += " It can be published with saip_tools_publish."
        else:
            message = f"'{report.name}' failed in the sandbox: {report.error}"
            if report.guard_blocks:
                message += " (refused by the sandbox: " + ", ".join(b.reason for b in report.guard_blocks) + ")"
        return ManagementResult(
            report.passed, message, persisted=report.local_pass, warnings=list(report.warnings), data=view
        )

    async def publish(self, arguments: NameInput) -> ManagementResult:
        if arguments.name in self._taken():
            raise ServiceRefused(
                f"'{arguments.name}' is already served on /mcp by another source; publish the tool under another name."
            )
        summary = await self.client.publish(arguments.name)
        view = summary_view(summary)
        if summary.exposed:
            message = f"Published '{summary.name}': it is served on /mcp now, and clients were told (list_changed)."
        else:
            message = (
                f"Published '{summary.name}'. It is not served yet: exposure is explicit, so add it with "
                "saip_tools_set_exposure."
            )
        return ManagementResult(True, message, persisted=True, data=view)

    async def delete(self, arguments: NameInput) -> ManagementResult:
        reply = await self.client.delete(arguments.name)
        state = STATES.get(reply.state, "tool")
        return ManagementResult(True, f"Deleted the {state} '{reply.name}'.", persisted=True, data={"name": reply.name})

    async def set_exposure(self, arguments: ExposureInput) -> ManagementResult:
        exposure = await self.client.set_exposure(arguments.autoExpose, arguments.tools, arguments.expectedRevision)
        view = exposure_view(exposure)
        return ManagementResult(True, "Exposure saved: " + exposure_summary(arguments) + ".", persisted=True, data=view)

    # Approval plans: exactly what will happen, read from the service.

    async def plan_save(self, arguments: SaveDraftInput) -> Approval:
        report = await self.client.check_risk(spec=arguments.spec)
        return Approval(
            Level.WRITE,
            f"save the draft '{report.name}' (risk L{report.risk_level}, "
            f"{network_words(report.network_mode, report.hosts_allow)}); a draft is not served",
        )

    async def plan_test(self, arguments: TestInput) -> Approval:
        report = await self.client.check_risk(name=arguments.name)
        what = "with the given arguments" if arguments.arguments else "with its declared test values (its Local Pass)"
        return Approval(
            Level.WRITE,
            f"run '{report.name}' in the sandbox {what}: risk L{report.risk_level}, "
            f"{network_words(report.network_mode, report.hosts_allow)}",
            high_risk=report.above_baseline,
        )

    async def plan_publish(self, arguments: NameInput) -> Approval:
        report = await self.client.check_risk(name=arguments.name)
        asks = "each call asks the person" if report.hitl_required else "calls run without asking the person"
        summary = (
            f"publish '{report.name}' and serve it on /mcp: risk L{report.risk_level}, "
            f"{network_words(report.network_mode, report.hosts_allow)}, {asks}"
        )
        if report.weakens_approval:
            summary += " (human approval switched off above L0)"
        return Approval(Level.DESTRUCTIVE, summary, high_risk=report.above_baseline or report.weakens_approval)

    async def plan_delete(self, arguments: NameInput) -> Approval:
        detail = await self.client.get(arguments.name)
        state = STATES.get(detail.summary.state, "tool")
        served = "; it leaves /mcp at once" if detail.summary.exposed else ""
        return Approval(Level.DESTRUCTIVE, f"delete the {state} '{detail.summary.name}'{served}")

    # Guides, examples, prompt.

    async def _examples_guide(self) -> str:
        try:
            listed = await self.client.list_tools(include_bundled=True)
        except (ServiceRefused, ServiceUnavailable) as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        bundled = [summary for summary in listed if summary.source == tools_pb2.TOOL_SOURCE_BUNDLED]
        lines = [f"- `saip://examples/{s.name}`: {s.description}" for s in bundled]
        return guide_text("examples") + "\n## The bundled tools\n\n" + "\n".join(lines) + "\n"

    async def _example(self, variables: dict[str, str]) -> str:
        name = variables.get("name", "")
        try:
            detail = await self.client.get(name)
        except (ServiceRefused, ServiceUnavailable) as exc:
            # A resource read has no result envelope: the refusal becomes the protocol error's message.
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        if detail.summary.source != tools_pb2.TOOL_SOURCE_BUNDLED:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"'{name}' is not a bundled example; saip://guide/tool-authoring/examples lists them.",
            )
        return detail.spec_json

    async def _create_tool_prompt(self, arguments: dict[str, str]) -> types.GetPromptResult:
        goal = arguments.get("goal", "").strip()
        ask = f"Create a saip tool that does this: {goal}" if goal else "Create a saip tool for the task I describe."
        procedure = (
            f"{ask}\n\nFollow the attached guide: write the spec, save it with saip_tools_save_draft, run "
            "saip_tools_test without arguments until the Local Pass passes, then saip_tools_publish (the person "
            "approves at this client), then call the new tool. Never put a secret in the spec: use a ${ENV_NAME} "
            "reference and ask the person to set the variable."
        )
        guide = types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri=GUIDE, text=guide_text(""), mime_type="text/markdown"),
        )
        return types.GetPromptResult(
            description="Author, test and publish a tool",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=procedure)),
                types.PromptMessage(role="user", content=guide),
            ],
        )


def exposure_summary(arguments: ExposureInput) -> str:
    auto = "serve every newly published tool" if arguments.autoExpose else "serve published tools only when listed"
    listed = ", ".join(arguments.tools) or "no others"
    return f"{auto}; also serve {listed}"


def _static(page: str) -> Callable[[], Any]:
    async def read() -> str:
        return guide_text(page)

    return read


def connect(address: str | None, stack: AsyncExitStack, registry: Registry) -> ToolsContribution | None:
    """The tools area when the tools service is configured (tools.addr); its client closes with the gateway."""
    if not address:
        return None
    client = ToolsClient(address)
    stack.push_async_callback(client.close)
    return ToolsContribution(client, lambda: registry.served_names(excluding=PUBLISHED_SOURCE))
