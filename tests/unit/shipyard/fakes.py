"""In-memory fakes of the shipyard's ports (it holds no tests itself)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from saip.shipyard.ports import Completed
from saip.v1 import knowledge_pb2, tools_pb2, upstream_pb2


@dataclass
class FakeCommands:
    """The host's programs as a table: which exist, and what each command line answers."""

    programs: set[str] = field(default_factory=set)
    answers: dict[tuple[str, ...], Completed] = field(default_factory=dict)
    ran: list[list[str]] = field(default_factory=list)

    def which(self, program: str) -> str | None:
        return f"/usr/bin/{program}" if program in self.programs else None

    async def run(self, argv: list[str], *, within: float) -> Completed:
        self.ran.append(argv)
        return self.answers.get(tuple(argv), Completed(1, f"{argv[0]}: no answer set for {argv}"))


@dataclass
class FakeSources:
    """The tools and knowledge services as tables of current definitions (the exposed upstream members and their
    servers among them)."""

    authored_details: dict[str, tools_pb2.ToolDetail] = field(default_factory=dict)
    definitions: dict[str, knowledge_pb2.KnowledgeToolDefinition] = field(default_factory=dict)
    exposed: dict[str, upstream_pb2.ExposedTool] = field(default_factory=dict)
    servers: dict[str, upstream_pb2.Server] = field(default_factory=dict)

    def author(self, spec: dict[str, Any], *, tested: bool = True) -> None:
        summary = tools_pb2.ToolSummary(name=spec["name"], tested=tested, state=tools_pb2.TOOL_STATE_PUBLISHED)
        self.authored_details[spec["name"]] = tools_pb2.ToolDetail(summary=summary, spec_json=json.dumps(spec))

    async def authored_tools(self) -> list[tools_pb2.ToolSummary]:
        return [detail.summary for detail in self.authored_details.values()]

    async def authored(self, name: str) -> tools_pb2.ToolDetail | None:
        return self.authored_details.get(name)

    async def knowledge_tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        return [definition.tool for definition in self.definitions.values()]

    async def knowledge(self, name: str) -> knowledge_pb2.KnowledgeToolDefinition | None:
        return self.definitions.get(name)

    async def snapshot(self, name: str, target: Path) -> knowledge_pb2.KnowledgeToolDefinition:
        await anyio.Path(target).write_bytes(b"a snapshot")
        return self.definitions[name]

    async def exposed_tools(self) -> list[upstream_pb2.ExposedTool]:
        return list(self.exposed.values())

    async def upstream_server(self, server_id: str) -> upstream_pb2.Server | None:
        return self.servers.get(server_id)
