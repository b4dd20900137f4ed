"""In-memory fakes of the shipyard's ports (it holds no tests itself)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from saip.shipyard.errors import Conflict, RuleRefused
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


class MemoryRecords:
    """Values by key, one revision counter for the store; a write naming a revision refuses one that moved on."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[bytes, int]] = {}
        self._revision = 0

    async def get(self, key: str) -> tuple[bytes, int] | None:
        return self.values.get(key)

    async def put(self, key: str, value: bytes, revision: int | None = None) -> int:
        found = self.values.get(key)
        if revision is not None and (found[1] if found else 0) != revision:
            raise Conflict(f"'{key}' changed since it was read; read it again and retry")
        self._revision += 1
        self.values[key] = (value, self._revision)
        return self._revision

    async def delete(self, key: str) -> None:
        self.values.pop(key, None)

    async def keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.values if key.startswith(prefix))


@dataclass
class MemoryArchives:
    objects: dict[str, bytes] = field(default_factory=dict)

    async def put(self, name: str, data: bytes) -> None:
        self.objects[name] = data

    async def get(self, name: str) -> bytes:
        if name not in self.objects:
            raise RuleRefused(f"the bundle {name} is missing; ship the server again")
        return self.objects[name]

    async def delete(self, name: str) -> None:
        self.objects.pop(name, None)


@dataclass
class Started:
    """A server the fake supervisor runs: what status reads of it."""

    version: int
    argv: list[str]
    port: int
    env: dict[str, str]
    state: str = "running"
    restarts: int = 0
    last_error: str = ""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    lines: deque[str] = field(default_factory=deque)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@dataclass
class FakeSupervisor:
    """The local target as a table: a start comes up at once (or fails, for the names in `failing`), and every argv
    started is kept in `started`."""

    failing: dict[str, str] = field(default_factory=dict)  # name -> the last error its start ends with
    withholding: dict[str, list[str]] = field(default_factory=dict)
    servers: dict[str, Started] = field(default_factory=dict)
    started: list[list[str]] = field(default_factory=list)

    def get(self, name: str) -> Started | None:
        return self.servers.get(name)

    async def start(
        self, name: str, version: int, argv: list[str], port: int, env: Mapping[str, str], secrets: list[str]
    ) -> Started:
        self.started.append(argv)
        server = Started(version, argv, port, dict(env))
        if name in self.failing:
            server.state, server.last_error = "failed", self.failing[name]
            return server
        self.servers[name] = server
        return server

    async def stop(self, name: str) -> None:
        if name in self.servers:
            self.servers[name].state = "stopped"

    def forget(self, name: str) -> None:
        self.servers.pop(name, None)

    async def withheld(self, name: str) -> list[str]:
        return self.withholding.get(name, [])
