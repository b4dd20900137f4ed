"""The exposed upstream tools on /mcp (the served-tools contract of `common.proto`) and each call proxied to them.

What is served comes from the composition and the ledger only (never from one replica's connections), so every
tools replica answers the same listing and every gateway serves the same tools: the accepted definition, the name
on /mcp, HITL when the member asks for it or its description tripped the poisoning scan, and the effective level.
A call goes to the server's connection on this replica, bounded in time (`tools.upstream-call-timeout-seconds`) and
size (`tools.upstream-max-result-bytes`); an upstream that is not connected is an error result naming the server
and its state, at once. The upstream's own questions go to `ask` (the caller's, through the gateway), their message
masked; without one they are declined. A question that parks the call for a 2026-07-28 caller (`upstream.parking`)
can end it from inside (`Stop`): no room to park, or nobody answered in time. A call cancelled by its caller is
cancelled upstream, and counted as `cancelled`. The gateway's published-tools gate asks the person, audits the call
(a ToolCall with its ProxiedCall) and counts it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from opentelemetry.trace import SpanKind

from saip.common import call_arguments, tracing
from saip.common.masking import Masker
from saip.tools.errors import RuleRefused
from saip.tools.metrics import ToolsMetrics
from saip.tools.upstream import registry
from saip.tools.upstream.client import DECLINE, Ask, failure
from saip.tools.upstream.exposure import Composed, Composer
from saip.tools.upstream.servers import Servers
from saip.v1 import common_pb2, upstream_pb2

_SPANS = tracing.tracer("tools")

SERVED_SOURCE = "exposed"
Progress = Callable[[float, float, str], Awaitable[None]]  # done, total (0: unknown), message
TRUNCATED = "\n[saip: the upstream's result was cut at {limit} bytes (tools.upstream-max-result-bytes)]"


@dataclass
class Stop:
    """Ends a call from inside one of its callbacks (the SDK runs a 2025-11-25 upstream's question outside the call's
    task, so raising there would reach the upstream, not the call): the call's reply says why, counted as `outcome`."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    text: str = ""
    outcome: str = ""

    def now(self, text: str, outcome: str) -> None:
        self.text, self.outcome = text, outcome
        self.scope.cancel()


class Proxy:
    def __init__(self, composer: Composer, servers: Servers, metrics: ToolsMetrics) -> None:
        self._composer = composer
        self._servers = servers
        self._metrics = metrics

    async def served(self) -> list[common_pb2.ServedTool]:
        entries, _ = await self._composer.everything()
        return [served_tool(entry) for entry in entries if not entry.withheld and entry.tool is not None]

    async def call(
        self,
        name: str,
        arguments_json: str,
        progress: Progress | None = None,
        ask: Ask | None = None,
        stop: Stop | None = None,
    ) -> common_pb2.CallServedToolReply:
        """Proxy one call; `progress` receives the upstream's progress reports, masked, as they come, `ask` its
        questions (masked) to the caller, and `stop` may end it early with its own reply."""
        entry = await self._composer.named(name)
        if entry is None:
            raise RuleRefused(f"'{name}' is not an exposed upstream tool; saip_expose_get lists the exposed tools.")
        if entry.withheld or entry.server is None:
            raise RuleRefused(f"'{name}' is not served right now: {entry.withheld}.")
        try:
            arguments = call_arguments.read(name, arguments_json)
        except call_arguments.BadArguments as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc))
        started, outcome = time.perf_counter(), "cancelled"
        attributes = {"saip.tool": name, "saip.upstream.server": entry.member.server_id}
        with _SPANS.span("upstream call", kind=SpanKind.CLIENT, attributes=attributes) as span:
            try:
                reply, outcome = await self._proxied(entry, arguments, progress, ask, stop or Stop())
            finally:
                span.set_attribute("saip.outcome", outcome)
                self._metrics.upstream_calls.labels(entry.member.server_id, outcome).inc()
                self._metrics.upstream_call_seconds.observe(time.perf_counter() - started)
        return reply

    async def _proxied(
        self, entry: Composed, arguments: dict[str, Any], progress: Progress | None, ask: Ask | None, stop: Stop
    ) -> tuple[common_pb2.CallServedToolReply, str]:
        """The call on this replica's connection, and how it ended (a bounded label)."""
        server_id, tool = entry.member.server_id, entry.member.tool
        connection = self._servers.connections.connection(server_id)
        masker = Masker(resolved_secrets(entry.server, self._servers.connections.limits.variables))
        report = progress

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                await report(progress, total or 0.0, masker.text(message or ""))

        async def question(message: str, schema: dict[str, Any]) -> types.ElicitResult:
            if ask is None:
                return DECLINE
            return await ask(
                f"Upstream server '{server_id}' asks (through {entry.name}): {masker.text(message)}", schema
            )

        try:
            if connection is None:
                raise RuleRefused(
                    f"Upstream server '{server_id}' is not connected on this replica yet; try again soon."
                )
            listed = connection.live.hashes.get(tool)
            if listed is not None and entry.row is not None and listed != entry.row.hash:
                # Changed since the ledger last saw it: recorded now (which withholds it), and not run.
                await self._servers.observe(server_id, connection.live, [tool])
                raise RuleRefused(
                    f"'{entry.name}' changed upstream just now; it is withheld until the person accepts it."
                )
            with stop.scope:
                result = await connection.call(tool, arguments, relay if report is not None else None, question)
            if stop.scope.cancelled_caught:
                return common_pb2.CallServedToolReply(is_error=True, text=stop.text), stop.outcome
        except RuleRefused as exc:
            return common_pb2.CallServedToolReply(is_error=True, text=str(exc)), "refused"
        except TimeoutError:
            limit = self._servers.connections.limits.call_timeout
            text = f"Upstream server '{server_id}' did not answer '{tool}' within {limit:g} s."
            return common_pb2.CallServedToolReply(is_error=True, text=text), "timeout"
        except Exception as exc:  # an upstream's failure is the call's error result, never the service's
            if stop.scope.cancel_called:  # the SDK turned the stop's cancel into its own failure
                return common_pb2.CallServedToolReply(is_error=True, text=stop.text), stop.outcome
            text = f"Upstream server '{server_id}' failed: {failure(exc)}."
            return common_pb2.CallServedToolReply(is_error=True, text=text), "error"
        reply = reply_of(result, self._servers.connections.limits.max_result_bytes, masker)
        return reply, "error" if reply.is_error else "ok"


def resolved_secrets(server: upstream_pb2.Server | None, variables: Mapping[str, str] | None) -> list[str]:
    """The values the server's references resolve to: masked wherever an upstream's answer repeats them."""
    values = [*server.headers.values(), *server.env.values()] if server is not None else []
    resolved = []
    for value in values:
        try:
            resolved.append(registry.resolve(value, variables))
        except RuleRefused:
            continue
    return resolved


def served_tool(entry: Composed) -> common_pb2.ServedTool:
    tool = entry.tool
    assert tool is not None
    return common_pb2.ServedTool(
        name=entry.name,
        title=tool.title,
        description=tool.description,
        input_schema_json=tool.input_schema_json,
        read_only=tool.read_only,
        destructive=tool.destructive,
        idempotent=tool.idempotent,
        open_world=tool.open_world,
        hitl_required=entry.asks,
        risk_level=entry.effective,
        source=SERVED_SOURCE,
        upstream_server=entry.member.server_id,
        upstream_tool=entry.member.tool,
    )


def reply_of(result: types.CallToolResult, limit: int, masker: Masker) -> common_pb2.CallServedToolReply:
    """The upstream's result as the model reads it: its text parts (other parts named), bounded, masked."""
    parts = []
    for content in result.content:
        if isinstance(content, types.TextContent):
            parts.append(content.text)
        else:
            parts.append(f"[{content.type} content]")
    text = "\n".join(parts)
    structured = json.dumps(result.structured_content, ensure_ascii=False) if result.structured_content else ""
    encoded = text.encode()
    if len(encoded) > limit:
        text = encoded[:limit].decode(errors="ignore") + TRUNCATED.format(limit=limit)
    if len(structured.encode()) > limit:
        structured = ""
    return common_pb2.CallServedToolReply(
        is_error=bool(result.is_error), text=masker.text(text), structured_json=masker.text(structured)
    )
