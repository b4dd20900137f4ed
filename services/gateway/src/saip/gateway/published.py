"""Published tools: what the serving services (tools, knowledge) serve on /mcp, kept live, and each call through them.

A serving service implements ListServedTools and CallServedTool (proto: saip.v1.ServedTool). Every change to what
it serves is a write to its key-value bucket; each gateway replica watches that bucket, lists the served tools
again, and replaces its registry source, so clients get `list_changed` on every replica. Published tools are served
whether or not the management surface is on.

A call passes the tool's own gate: a tool with HITL REQUIRED asks the person through the same code as the
management gate (both eras, same outcome sentences), then the owning service runs it, and one ToolCall record,
masked, lands on the audit trail.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from google.protobuf.timestamp_pb2 import Timestamp
from nats.js.kv import KeyValue

from saip.common import names
from saip.common.masking import Masker
from saip.gateway import metrics
from saip.gateway.approval import Approvals, Decided, Decision, Interaction
from saip.gateway.clients import GrpcClient
from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.gateway.gate import ABANDONED, UNEXPECTED, GateResult, Verdict, consult, seconds
from saip.gateway.management import Caller, Outcome
from saip.gateway.registry import Changes, Registry, ServedSet, ServedTool
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

SOURCE_PREFIX = "published:"
CALL_DEADLINE = 120.0  # a sandboxed tool has 30 s of wall clock by default; the service enforces its own limit


@dataclass(frozen=True)
class ServingService:
    """A service that serves tools: its gRPC service name and the bucket whose changes change what it serves."""

    name: str
    grpc_service: str
    bucket: str


SERVING = {
    "tools": ServingService("tools", "saip.v1.ToolsService", names.TOOLS_BUCKET),
    "knowledge": ServingService("knowledge", "saip.v1.KnowledgeService", names.KNOWLEDGE_BUCKET),
}


class ServedToolsClient(GrpcClient):
    """ListServedTools and CallServedTool of one serving service; each area's client extends it, so the gateway
    keeps one channel per service."""

    def __init__(self, serving: ServingService, address: str, *, deadline: float = 5.0) -> None:
        super().__init__(serving.name, address, deadline=deadline)
        self.serving = serving
        prefix = f"/{serving.grpc_service}"
        self._list = self._channel.unary_unary(
            f"{prefix}/ListServedTools",
            request_serializer=common_pb2.ListServedToolsRequest.SerializeToString,
            response_deserializer=common_pb2.ListServedToolsReply.FromString,
        )
        self._run = self._channel.unary_unary(
            f"{prefix}/CallServedTool",
            request_serializer=common_pb2.CallServedToolRequest.SerializeToString,
            response_deserializer=common_pb2.CallServedToolReply.FromString,
        )

    async def list(self) -> list[common_pb2.ServedTool]:
        reply = await self._call(self._list, common_pb2.ListServedToolsRequest())
        return list(reply.tools)

    async def call(self, name: str, arguments: dict[str, Any], caller: Caller) -> common_pb2.CallServedToolReply:
        request = common_pb2.CallServedToolRequest(
            name=name, arguments_json=json.dumps(arguments, ensure_ascii=False), caller=caller.proto
        )
        return await self._call(self._run, request, CALL_DEADLINE)


class Notifier(Protocol):
    async def changed(self, changes: Changes) -> None: ...


class ToolCallSink(Protocol):
    async def tool_call(self, record: events_pb2.ToolCall) -> str | None: ...


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


class _Placeholders(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def tool_question(spec: common_pb2.ServedTool, caller: Caller, arguments: Mapping[str, Any], wait: float) -> str:
    """`[risk Ln] <client> wants to run <tool>: <prompt>. Answer within <wait> s, or the call is refused.`

    The prompt is the tool's own template with {name} placeholders filled from the (masked) arguments, or the
    arguments themselves.
    """
    masker = Masker()
    masked = masker.value(dict(arguments))
    if spec.hitl_prompt:
        values = _Placeholders({key: _plain(value) for key, value in masked.items()})
        try:
            prompt = spec.hitl_prompt.format_map(values)
        except (ValueError, IndexError, AttributeError):
            prompt = spec.hitl_prompt
    else:
        prompt = f"run it with {json.dumps(masked, ensure_ascii=False, sort_keys=True)[:500]}"
    return (
        f"[risk L{spec.risk_level}] {caller.label} wants to run {spec.name}: {prompt.rstrip('.')}. "
        f"Answer within {seconds(wait)} s, or the call is refused."
    )


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass
class _Call:
    spec: common_pb2.ServedTool
    caller: Caller
    arguments: dict[str, Any]
    started: float
    decision: Decided | None = None
    asked_at: float | None = None


class PublishedTools:
    """The gate of published tools: the HITL question when the tool asks for one, the call, the audit record."""

    def __init__(self, *, approvals: Approvals, audit: ToolCallSink, replica: str) -> None:
        self.approvals = approvals
        self._audit = audit
        self._replica = replica

    async def execute(
        self,
        spec: common_pb2.ServedTool,
        client: ServedToolsClient,
        arguments: dict[str, Any] | None,
        caller: Caller,
        interaction: Interaction,
    ) -> GateResult:
        call = _Call(spec, caller, dict(arguments or {}), time.time())
        try:
            result, outcome = await self._run(call, client, interaction)
        except anyio.get_cancelled_exc_class():
            if call.asked_at is not None and call.decision is None:
                call.decision = Decided(Decision.ELICIT_FAILED, time.time() - call.asked_at, "the client went away")
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                abandoned = GateResult(text=ABANDONED.format(tool=spec.name), is_error=True)
                await self._record(call, abandoned, Outcome.ERROR)
            raise
        if result.question is None:
            await self._record(call, result, outcome)
        return result

    async def _run(
        self, call: _Call, client: ServedToolsClient, interaction: Interaction
    ) -> tuple[GateResult, Outcome]:
        name = call.spec.name
        if call.spec.hitl_required:
            text = tool_question(call.spec, call.caller, call.arguments, self.approvals.wait_seconds)

            def asking() -> None:
                call.asked_at = time.time()

            verdict: Verdict = await consult(
                self.approvals, interaction, call.caller, name, call.arguments, text, asking
            )
            call.decision = verdict.decided
            if verdict.asked is not None:
                return GateResult(question=verdict.asked), Outcome.OK
            if verdict.refusal is not None:
                return GateResult(text=verdict.refusal, is_error=True), verdict.outcome
        try:
            reply = await client.call(name, call.arguments, call.caller)
        except (ServiceRefused, ServiceUnavailable) as exc:
            return GateResult(text=str(exc), is_error=True), Outcome.ERROR
        except Exception as exc:
            logger.exception("published tool call failed", extra={"tool": name})
            message = UNEXPECTED.format(message=Masker().text(str(exc)) or type(exc).__name__)
            return GateResult(text=message, is_error=True), Outcome.ERROR
        structured = _object(reply.structured_json)
        result = GateResult(text=reply.text, structured=structured, is_error=reply.is_error)
        return result, Outcome.ERROR if reply.is_error else Outcome.OK

    async def _record(self, call: _Call, result: GateResult, outcome: Outcome) -> None:
        masker = Masker()
        duration = time.time() - call.started
        stamp = Timestamp()
        stamp.FromNanoseconds(int(call.started * 1e9))
        decision = call.decision
        record = events_pb2.ToolCall(
            id=str(uuid.uuid4()),
            time=stamp,
            gateway=self._replica,
            caller=call.caller.proto,
            tool=call.spec.name,
            source=call.spec.source,
            outcome=outcome.proto,
            duration_ms=int(duration * 1000),
            arguments=masker.json(call.arguments),
            result=masker.text(result.text or "")[:2000],
            hitl=decision.decision.proto if decision else common_pb2.HITL_DECISION_UNSPECIFIED,
            approval_seconds=decision.waited if decision else 0.0,
            side=common_pb2.HITL_SIDE_SERVER if decision else common_pb2.HITL_SIDE_UNSPECIFIED,
        )
        metrics.TOOL_CALL_SECONDS.labels(call.spec.source or "unknown", outcome.value).observe(duration)
        warning = await self._audit.tool_call(record)
        if warning:
            logger.warning("tool call record not stored durably", extra={"tool": call.spec.name})


def _object(text: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class PublishedSource:
    """One serving service's tools in the registry, listed again whenever its bucket changes."""

    def __init__(
        self,
        *,
        client: ServedToolsClient,
        serving: ServingService,
        registry: Registry,
        notifier: Notifier,
        gate: PublishedTools,
        retry_seconds: float = 1.0,
    ) -> None:
        self.client = client
        self.serving = serving
        self._registry = registry
        self._notifier = notifier
        self._gate = gate
        self._retry = retry_seconds
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()
        self.listed = False  # whether the last listing succeeded

    @property
    def source(self) -> str:
        return SOURCE_PREFIX + self.serving.name

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
                logger.info("published tools changed", extra={"source": self.serving.name, "tools": len(served.tools)})
                await self._notifier.changed(changes)
            return changes

    def _caller(self, spec: common_pb2.ServedTool) -> Callable[..., Any]:
        async def call(arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction) -> GateResult:
            return await self._gate.execute(spec, self.client, arguments, caller, interaction)

        return call

    async def keep_listing(self) -> None:
        """Runs for the gateway's life: lists at once, then after every change; retries while the service is away."""
        self._dirty.set()
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            try:
                await self.refresh()
            except (ServiceUnavailable, ServiceRefused) as exc:
                self._retry_later()
                logger.warning(
                    "cannot list published tools; retrying", extra={"source": self.serving.name, "error": str(exc)}
                )
                await anyio.sleep(self._retry)
            except Exception:  # a bad answer must not take the gateway down: say it, try again
                self._retry_later()
                logger.exception("listing published tools failed; retrying", extra={"source": self.serving.name})
                await anyio.sleep(self._retry)

    def _retry_later(self) -> None:
        self.listed = False
        self._dirty.set()

    async def follow(self, kv: KeyValue) -> None:
        """Mark the listing stale on every change to the bucket, until the watcher ends."""
        watcher = await kv.watchall()
        try:
            async for _entry in watcher:
                self.changed()
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]
