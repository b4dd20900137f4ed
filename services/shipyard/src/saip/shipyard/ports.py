"""What the shipyard rules need from outside, as protocols: the sources of what ships (the tools and knowledge
services over gRPC, the upstream members the tools service exposes among them, `clients.GrpcSources`), the records
(the saip-shipyard bucket, `clients.KvRecords`), the bundle archives (the saip-bundles object store,
`clients.ObjectArchives`), the host's commands (`targets.HostCommands`, which runs `docker` and `kubectl`) and the
local target's supervisor of running servers (`local.LocalRuns`). tests/unit/shipyard/fakes.py holds in-memory ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from saip.v1 import knowledge_pb2, tools_pb2, upstream_pb2


class Sources(Protocol):
    """The current definitions of what can ship. A missing tool is None; a service away raises StoreUnavailable."""

    async def authored_tools(self) -> list[tools_pb2.ToolSummary]: ...
    async def authored(self, name: str) -> tools_pb2.ToolDetail | None: ...
    async def knowledge_tools(self) -> list[knowledge_pb2.KnowledgeTool]: ...
    async def knowledge(self, name: str) -> knowledge_pb2.KnowledgeToolDefinition | None: ...
    async def snapshot(self, name: str, target: Path) -> knowledge_pb2.KnowledgeToolDefinition:
        """The tool's definition, and its snapshot written at `target`."""
        ...

    async def exposed_tools(self) -> list[upstream_pb2.ExposedTool]:
        """The upstream members exposed on saip's /mcp, each with its accepted definition and ledger hash."""
        ...

    async def upstream_server(self, server_id: str) -> upstream_pb2.Server | None: ...


class Records(Protocol):
    """Key-value records with revisions; `put` with a revision refuses (Conflict) when the key moved on."""

    async def get(self, key: str) -> tuple[bytes, int] | None: ...
    async def put(self, key: str, value: bytes, revision: int | None = None) -> int: ...
    async def delete(self, key: str) -> None: ...
    async def keys(self, prefix: str) -> list[str]: ...


class Archives(Protocol):
    """Bundle archives by object name."""

    async def put(self, name: str, data: bytes) -> None: ...
    async def get(self, name: str) -> bytes: ...
    async def delete(self, name: str) -> None: ...


@dataclass(frozen=True)
class Completed:
    code: int
    output: str


class Commands(Protocol):
    """The host's command line: whether a program is there, and one bounded run of it."""

    def which(self, program: str) -> str | None: ...
    async def run(self, argv: list[str], *, within: float) -> Completed: ...


class Supervised(Protocol):
    """What status shows of one server the local target runs."""

    @property
    def version(self) -> int: ...
    @property
    def argv(self) -> list[str]:
        """The command line it was started with: the one its run's approval quoted."""
        ...

    @property
    def state(self) -> str:
        """starting, running, restarting, failed or stopped."""
        ...

    @property
    def restarts(self) -> int: ...
    @property
    def last_error(self) -> str: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def lines(self) -> Sequence[str]:
        """Its last lines of output, masked."""
        ...

    @property
    def endpoint(self) -> str: ...


class Supervisor(Protocol):
    """The local target: each server a supervised process of this service, by name."""

    def get(self, name: str) -> Supervised | None: ...
    async def start(
        self, name: str, version: int, argv: list[str], port: int, env: Mapping[str, str], secrets: list[str]
    ) -> Supervised:
        """Start `argv` (listening on `port`) and return once it answers its health check, or failed to (then its
        state is `failed` and it is not kept)."""
        ...

    async def stop(self, name: str) -> None: ...
    def forget(self, name: str) -> None:
        """Drop what is kept of a stopped server."""
        ...

    async def withheld(self, name: str) -> list[str]:
        """The upstream members the running server withholds now (`member: reason`)."""
        ...
