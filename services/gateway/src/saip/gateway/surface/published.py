"""Published tools: what the serving services (tools, knowledge) serve on /mcp, kept live.

A serving service implements ListServedTools and CallServedTool (proto: saip.v1.ServedTool). Every change to what
it serves is a write to its key-value bucket; each gateway replica watches that bucket, lists the served tools
again, and replaces its registry source, so clients get `list_changed` on every replica. Published tools are served
whether or not the management surface is on; each call passes the tools' own gate (`surface.published_gate`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from nats.js.kv import KeyValue

from saip.gateway.surface.approval import Interaction
from saip.gateway.surface.gate import GateResult
from saip.gateway.surface.management import Caller
from saip.gateway.surface.published_gate import PublishedTools
from saip.gateway.surface.registrar import Notifier
from saip.gateway.surface.registry import Changes, Registry, ServedSet, ServedTool
from saip.gateway.surface.served import ServedToolsClient
from saip.v1 import common_pb2

logger = logging.getLogger(__name__)

SOURCE_PREFIX = "published:"


def definition(spec: common_pb2.ServedTool) -> types.Tool:
    """What the model sees: name, title, description, the schema, and the annotations."""
    schema = json.loads(spec.input_schema_json or "{}")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError("the input schema must be a JSON object schema")
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return types.Tool(
        name=spec.name,
        title=spec.title or None,
        description=spec.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=spec.title or None,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=spec.open_world,
        ),
    )


class PublishedSource:
    """One serving service's tools in the registry, listed again whenever its bucket changes."""

    def __init__(
        self, *, client: ServedToolsClient, registry: Registry, notifier: Notifier, gate: PublishedTools
    ) -> None:
        self.client = client
        self._registry = registry
        self._notifier = notifier
        self._gate = gate
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()
        self.listed = False  # whether the last listing succeeded

    @property
    def service(self) -> str:
        return self.client.service

    @property
    def source(self) -> str:
        return source_of(self.service)

    def changed(self) -> None:
        """Something in the bucket changed (or may have): list again soon; bursts collapse into one listing."""
        self._dirty.set()

    async def refresh(self) -> Changes:
        """List the served tools and replace this source's share of /mcp; raises when the service is away."""
        async with self._lock:
            specs = await self.client.list()
            served = ServedSet()
            taken = self._registry.served_names(excluding=self.source)
            for spec in specs:
                if spec.name in taken or spec.name in served.tools:
                    logger.warning("served tool name taken; not serving it twice", extra={"tool": spec.name})
                    continue
                try:
                    tool = definition(spec)
                except ValueError as exc:
                    logger.warning("served tool skipped", extra={"tool": spec.name, "error": str(exc)})
                    continue
                served.tools[spec.name] = ServedTool(tool, self._caller(spec))
            changes = self._registry.replace(self.source, served)
            self.listed = True
            if changes.any:
                logger.info("published tools changed", extra={"source": self.service, "tools": len(served.tools)})
                await self._notifier.changed(changes)
            return changes

    def _caller(self, spec: common_pb2.ServedTool) -> Callable[..., Any]:
        async def call(arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction) -> GateResult:
            return await self._gate.execute(spec, self.client, arguments, caller, interaction)

        return call

    async def keep_listing(self) -> None:
        """List at once, then after every change, until a listing fails: the gateway keeps it alive
        (`saip.common.watch.keep_alive`: backoff with jitter while the service is away), and each start lists."""
        while True:
            self._dirty = anyio.Event()
            try:
                await self.refresh()
            except Exception:
                self.listed = False
                raise
            await self._dirty.wait()

    async def follow(self, kv: KeyValue) -> None:
        """Mark the listing stale now (a reconnect may have hidden changes) and on every change to the bucket, until
        the watcher ends."""
        self.changed()
        watcher = await kv.watchall()
        try:
            async for _entry in watcher:
                self.changed()
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]


def source_of(service: str) -> str:
    """The registry source of the tools a service serves."""
    return SOURCE_PREFIX + service
