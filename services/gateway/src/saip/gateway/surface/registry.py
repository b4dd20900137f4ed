"""What /mcp serves right now: tools, resources, resource templates, prompts and skills, grouped by the source that
owns them.

The management surface is one source (kept by the registrar); published tools are another. Replacing a source's set
reports which lists changed, so only the affected `list_changed` notifications go out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.inbound import X_MCP_HEADER_KEY
from mcp.shared.uri_template import UriTemplate

from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import Interaction
from saip.gateway.surface.gate import GateResult
from saip.gateway.surface.management import Caller, ManagementPrompt, ManagementResource, ManagementResourceTemplate
from saip.gateway.surface.skills import Skill

ToolCall = Callable[[dict[str, Any] | None, Caller, Interaction], Awaitable[GateResult]]

# The source the registrar keeps: the management surface, which a caller without the management grant does not see.
MANAGEMENT = "management"


@dataclass(frozen=True)
class ServedTool:
    definition: types.Tool
    call: ToolCall


@dataclass(frozen=True)
class ServedSet:
    tools: dict[str, ServedTool] = field(default_factory=dict)
    resources: dict[str, ManagementResource] = field(default_factory=dict)
    templates: dict[str, ManagementResourceTemplate] = field(default_factory=dict)
    prompts: dict[str, ManagementPrompt] = field(default_factory=dict)
    # By the URI of each skill's SKILL.md, which resources/list lists (`surface.skills`).
    skills: dict[str, Skill] = field(default_factory=dict)


@dataclass(frozen=True)
class Changes:
    tools: bool = False
    resources: bool = False
    prompts: bool = False

    @property
    def any(self) -> bool:
        return self.tools or self.resources or self.prompts

    def merged(self, other: Changes) -> Changes:
        """What changed in either: two changes told in one list_changed round."""
        return Changes(self.tools or other.tools, self.resources or other.resources, self.prompts or other.prompts)


def _tool_signature(served: dict[str, ServedTool]) -> dict[str, str]:
    return {name: tool.definition.model_dump_json() for name, tool in served.items()}


def declares_headers(schema: Any) -> bool:
    """Whether an input schema carries an `x-mcp-header` annotation anywhere (the SDK decides which are valid)."""
    if isinstance(schema, dict):
        return X_MCP_HEADER_KEY in schema or any(declares_headers(value) for value in schema.values())
    if isinstance(schema, list):
        return any(declares_headers(value) for value in schema)
    return False


class Registry:
    def __init__(self, metrics: GatewayMetrics) -> None:
        self._sources: dict[str, ServedSet] = {}
        # Worked out once per change of what is served (`replace`), since every call reads them: every served tool
        # by name, and the input schemas that declare an `x-mcp-header` (`input_schema`).
        self._tools: dict[str, ServedTool] = {}
        self._header_schemas: dict[str, dict[str, Any]] = {}
        self._metrics = metrics

    def replace(self, source: str, served: ServedSet) -> Changes:
        before = self._sources.get(source, ServedSet())
        self._sources[source] = served
        self._tools = self._all_tools()
        self._header_schemas = {
            name: tool.definition.input_schema
            for name, tool in self._tools.items()
            if declares_headers(tool.definition.input_schema)
        }
        changes = Changes(
            tools=_tool_signature(before.tools) != _tool_signature(served.tools),
            resources=(before.resources.keys(), before.templates.keys(), before.skills.keys())
            != (served.resources.keys(), served.templates.keys(), served.skills.keys()),
            prompts=before.prompts.keys() != served.prompts.keys(),
        )
        gauge = self._metrics.served
        gauge.labels("tools").set(len(self._tools))
        gauge.labels("resources").set(sum(len(s.resources) for s in self._sources.values()))
        gauge.labels("resource_templates").set(sum(len(s.templates) for s in self._sources.values()))
        gauge.labels("prompts").set(sum(len(s.prompts) for s in self._sources.values()))
        gauge.labels("skills").set(sum(len(s.skills) for s in self._sources.values()))
        return changes

    def _all_tools(self) -> dict[str, ServedTool]:
        """Every served tool; when two sources name the same tool, the one registered first keeps it."""
        merged: dict[str, ServedTool] = {}
        for served in self._sources.values():
            for name, tool in served.tools.items():
                merged.setdefault(name, tool)
        return merged

    def served_names(self, excluding: str | None = None) -> set[str]:
        """The tool names /mcp serves, optionally leaving one source out (the one about to be replaced)."""
        return {name for source, served in self._sources.items() if source != excluding for name in served.tools}

    def _each(self, excluding: str | None = None) -> Iterable[ServedSet]:
        return [served for source, served in self._sources.items() if source != excluding]

    def tools(self, excluding: str | None = None) -> list[types.Tool]:
        """Every tool served, or every one but those of the source `excluding` (what a caller may not see)."""
        if excluding is None:
            return [tool.definition for tool in self._tools.values()]
        hidden = self._sources.get(excluding, ServedSet()).tools
        return [tool.definition for name, tool in self._tools.items() if name not in hidden]

    def tool(self, name: str) -> ServedTool | None:
        return self._tools.get(name)

    def tool_names(self, source: str) -> list[str]:
        return sorted(self._sources.get(source, ServedSet()).tools)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The schema the MCP SDK checks a `tools/call`'s `Mcp-Param-*` headers against, asked on every call: only a
        tool whose schema declares such a header has one. The check compares each declared header with its argument
        and nothing else, so a schema that declares none passes whatever was sent, as None (no schema) does without
        walking the schema; which schemas declare one is known from the last change (`replace`), not found per call."""
        return self._header_schemas.get(name)

    def resources(self, excluding: str | None = None) -> list[types.Resource]:
        """Every fixed resource, then each skill's SKILL.md (a skill's other files are listed by its entry); none of
        the source `excluding` (what a caller may not see)."""
        return [resource.definition() for served in self._each(excluding) for resource in served.resources.values()] + [
            skill.files[0].definition() for skill in self.skills(excluding)
        ]

    def resource_templates(self, excluding: str | None = None) -> list[types.ResourceTemplate]:
        return [template.definition() for served in self._each(excluding) for template in served.templates.values()]

    def prompts(self, excluding: str | None = None) -> list[types.Prompt]:
        return [prompt.definition() for served in self._each(excluding) for prompt in served.prompts.values()]

    def prompt(self, name: str, excluding: str | None = None) -> ManagementPrompt | None:
        for served in self._each(excluding):
            if name in served.prompts:
                return served.prompts[name]
        return None

    def skills(self, excluding: str | None = None) -> list[Skill]:
        return [skill for served in self._each(excluding) for skill in served.skills.values()]

    def skill(self, uri: str, excluding: str | None = None) -> Skill | None:
        """The skill whose SKILL.md is at `uri`."""
        return next((skill for skill in self.skills(excluding) if skill.uri == uri), None)

    async def read(self, uri: str, excluding: str | None = None) -> tuple[str, str] | None:
        """(text, mime type) of the resource at `uri`: a fixed resource first, then a skill's file, then the first
        template that matches."""
        for served in self._each(excluding):
            if uri in served.resources:
                resource = served.resources[uri]
                return await resource.read(), resource.mime_type
        for skill in self.skills(excluding):
            file = skill.file(uri)
            if file is not None:
                return await file.read(), file.mime_type
        for served in self._each(excluding):
            for template in served.templates.values():
                variables = UriTemplate.parse(template.uri_template).match(uri)
                if variables is not None:
                    flat = {
                        key: value if isinstance(value, str) else ",".join(value) for key, value in variables.items()
                    }
                    return await template.read(flat), template.mime_type
        return None
