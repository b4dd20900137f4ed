"""A contribution only the tests register, and the in-memory collaborators the gate tests wire around it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus
from pydantic import Field

from saip.common.approval_sentences import NOT_WAITING
from saip.gateway.config import ApprovalMode, Transport
from saip.gateway.errors import ServiceRefused
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface import pending
from saip.gateway.surface.asking import Approvals
from saip.gateway.surface.audited import Auditor
from saip.gateway.surface.expected import Expected
from saip.gateway.surface.gate import Gate
from saip.gateway.surface.limits import WindowLimit
from saip.gateway.surface.management import (
    Approval,
    Caller,
    Contribution,
    Input,
    Level,
    ManagementPrompt,
    ManagementResource,
    ManagementResourceTemplate,
    ManagementResult,
    ManagementTool,
    NoInput,
)
from saip.gateway.surface.mcp_server import GatewayServer, LegacySessions, ListChangedNotifier, build_server
from saip.gateway.surface.pending import Parked, QuestionStore
from saip.gateway.surface.registrar import Policy, Registrar
from saip.gateway.surface.registry import Changes, Registry
from saip.v1 import events_pb2, gateway_pb2

SEALING_KEY = "k" * 40
LOOPBACK_SECRET = "loopback-secret-for-tests"


class NoInteraction:
    """A call's channel to the person that must not be used: the call is refused before anything is asked."""

    roundtrip = False
    reports_progress = False
    answer = None
    state = None

    async def elicit(self, message: str, schema: dict[str, object]) -> object:
        raise AssertionError("a refused call asks nobody")

    async def progress(self, done: float, total: float, message: str) -> None:
        raise AssertionError("no progress for a refused call")


class RecordingAudit:
    """Keeps every management call record the gate stores."""

    def __init__(self) -> None:
        self.records: list[events_pb2.ManagementCall] = []

    async def publish(self, subject: str, record: events_pb2.AuditRecord, record_id: str) -> str | None:
        self.records.append(record.management)
        return None


class SpentNonces:
    def __init__(self) -> None:
        self.spent: set[str] = set()

    async def spend(self, nonce: str, tool: str) -> bool:
        if nonce in self.spent:
            return False
        self.spent.add(nonce)
        return True


class NameInput(Input):
    name: str = Field(min_length=1, max_length=64, description="What to act on.")
    count: int = Field(default=1, ge=1, le=10)


class ProbeContribution:
    """Tools at every level; each records its runs so a test can tell whether it ran."""

    category = "probe"

    def __init__(self) -> None:
        self.runs: list[tuple[str, object, Caller]] = []
        self.expected: list[Expected] = []  # what each run was handed by its approval

    async def _run(self, tool: str, arguments: object, caller: Caller) -> ManagementResult:
        self.runs.append((tool, arguments, caller))
        return ManagementResult(True, f"{tool} ran", persisted=True, data={"tool": tool})

    def _tool(self, name: str, level: Level, **kwargs: object) -> ManagementTool:
        async def handler(arguments: object, caller: Caller, expected: Expected) -> ManagementResult:
            self.expected.append(expected)
            return await self._run(name, arguments, caller)

        defaults: dict[str, object] = {
            "input_model": NameInput,
            "summary": lambda args: f"act on '{args.name}' {args.count} time(s)",
            "handler": handler,
        }
        defaults.update(kwargs)
        return ManagementTool(
            name=name,
            category=self.category,
            title=name.replace("_", " "),
            description=f"Test tool at level {level.value}.",
            level=level,
            **defaults,  # type: ignore[arg-type]
        )

    def tools(self) -> Sequence[ManagementTool]:
        async def refuse(arguments: object, caller: Caller, expected: Expected) -> ManagementResult:
            raise ServiceRefused("'cafe-desk' is managed by configuration; change it under tools.cafe-desk instead.")

        async def crash(arguments: object, caller: Caller, expected: Expected) -> ManagementResult:
            raise RuntimeError("boom with Authorization: Bearer sk-live-abcdef123456")

        async def flood(arguments: NameInput, caller: Caller, expected: Expected) -> ManagementResult:
            # A multi-megabyte answer: `count` million characters, quotes included so escaping makes it grow.
            text = ('"' + arguments.name) * (1_000_000 * arguments.count // (len(arguments.name) + 1))
            return ManagementResult(True, "flooded", data={"text": text})

        return [
            self._tool("saip_probe_flood", Level.READ, handler=flood),
            self._tool("saip_probe_read", Level.READ, input_model=NoInput, summary="read"),
            self._tool("saip_probe_write", Level.WRITE),
            self._tool("saip_probe_delete", Level.DESTRUCTIVE),
            self._tool(
                "saip_probe_risky",
                Level.WRITE,
                planner=lambda args: Approval(Level.WRITE, f"open the sandbox for '{args.name}'", high_risk=True),
            ),
            self._tool("saip_probe_refuse", Level.READ, handler=refuse),
            self._tool("saip_probe_crash", Level.READ, handler=crash),
        ]

    def resources(self) -> Sequence[ManagementResource]:
        async def read() -> str:
            return '{"probe": true}'

        return [ManagementResource("saip://status/probe", "Probe status", "Test status resource.", read)]

    def resource_templates(self) -> Sequence[ManagementResourceTemplate]:
        async def read(variables: dict[str, str]) -> str:
            return f"example {variables['name']}"

        return [ManagementResourceTemplate("saip://examples/{name}", "Examples", "Test template.", read)]

    def prompts(self) -> Sequence[ManagementPrompt]:
        return []


class MemoryQuestions:
    """The saip-questions bucket as a dict of (question, revision), changed by `surface.pending`'s changes as the NATS
    store changes it; a write against a moved revision fails."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.entries: dict[str, tuple[gateway_pb2.PendingQuestion, int]] = {}
        self._revision = 0
        self._clock = clock

    def _put(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        self._revision += 1
        self.entries[nonce] = (question, self._revision)

    def _change(
        self, nonce: str, change: Callable[[gateway_pb2.PendingQuestion], gateway_pb2.PendingQuestion | None]
    ) -> gateway_pb2.PendingQuestion | None:
        changed = change(self.entries[nonce][0])
        if changed is not None:
            self._put(nonce, changed)
        return changed

    async def park(self, nonce: str, question: gateway_pb2.PendingQuestion) -> None:
        assert nonce not in self.entries
        self._put(nonce, question)

    async def settle(self, nonce: str, ended: str = pending.ANSWERED) -> bool:
        if nonce not in self.entries:
            return True
        return self._change(nonce, lambda question: pending.settled(question, ended, self._clock())) is not None

    async def expire(self, parked: Parked, replica: str) -> bool:
        if self.entries.get(parked.nonce, (None, -1))[1] != parked.revision:
            return False
        self._put(parked.nonce, pending.claimed(parked.question, replica, self._clock()))
        return True

    async def stored(self, nonce: str) -> gateway_pb2.PendingQuestion | None:
        found = self.entries.get(nonce)
        return found[0] if found is not None else None

    async def answer(self, nonce: str, decision: str, now: float, via: str) -> gateway_pb2.PendingQuestion:
        changed = None
        if nonce in self.entries:
            changed = self._change(nonce, lambda question: pending.answered(question, decision, now, via))
        if changed is None:
            raise ServiceRefused(NOT_WAITING.format(id=nonce))
        return changed

    async def hand_over(self, nonce: str, client: str) -> bool:
        if nonce not in self.entries:
            return False
        return self._change(nonce, lambda question: pending.handed_over(question, client)) is not None

    async def watch(self) -> AsyncIterator[Parked | str | None]:
        """The current entries, then the end of them; the test follows again for each look."""
        for nonce, (question, revision) in list(self.entries.items()):
            yield Parked(nonce, question, revision)
        yield None


class RecordingNotifier:
    def __init__(self) -> None:
        self.changes: list[Changes] = []

    async def changed(self, changes: Changes) -> None:
        self.changes.append(changes)


@dataclass
class Harness:
    server: GatewayServer
    registry: Registry
    registrar: Registrar
    gate: Gate
    audit: RecordingAudit
    probe: ProbeContribution
    nonces: SpentNonces
    sessions: LegacySessions
    notifier: ListChangedNotifier
    token: dict[str, bool] = field(default_factory=lambda: {"set": True})

    @asynccontextmanager
    async def delivering(self) -> AsyncIterator[None]:
        """The notifier's fan-out running, as the gateway runs it, until the block ends."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.notifier.deliver_forever)
            yield
            group.cancel_scope.cancel()


def harness(
    home: Path,
    *,
    mode: ApprovalMode = ApprovalMode.DESTRUCTIVE,
    wait: float = 5.0,
    interval: float = 10.0,
    enabled: bool = True,
    transport: Transport = Transport.HTTP,
    exclude: frozenset[str] = frozenset(),
    others: Sequence[Contribution] = (),
    calls: int = 0,
    questions: int = 0,
    pending: QuestionStore | None = None,
    clock: Callable[[], float] = time.time,
    out_of_band: bool = False,
    send_seconds: float = 5.0,
    min_answer: float = 0.0,
) -> Harness:
    """The gate, registrar and MCP server around the probe tools (and `others`, under their own categories)."""
    metrics = GatewayMetrics()
    registry = Registry(metrics)
    bus = InMemorySubscriptionBus()
    sessions = LegacySessions(metrics, send_seconds=send_seconds)
    notifier = ListChangedNotifier(bus, sessions)
    audit = RecordingAudit()
    nonces = SpentNonces()
    gate = Gate(
        mode=mode,
        approvals=Approvals(
            wait_seconds=wait,
            progress_interval=interval,
            nonces=nonces,
            metrics=metrics,
            questions=WindowLimit(questions, 60),
            pending=pending,
            clock=clock,
            out_of_band=out_of_band,
            min_answer=min_answer,
        ),
        auditor=Auditor(sink=audit, replica="test-replica", metrics=metrics, questions=pending),
        metrics=metrics,
        calls=WindowLimit(calls, 60),
    )
    probe = ProbeContribution()
    token = {"set": True}
    registrar = Registrar(
        policy=Policy(
            enabled=enabled,
            categories=frozenset({"probe", *(other.category for other in others)}),
            exclude=exclude,
            transport=transport,
            home=home,
            approval=mode,
            wait_seconds=wait,
        ),
        contributions=[probe, *others],
        authenticated=lambda: token["set"],
        gate=gate,
        registry=registry,
        notifier=notifier,
        metrics=metrics,
    )
    server = build_server(
        registry=registry,
        sessions=sessions,
        bus=bus,
        sealing_key=SEALING_KEY,
        state_ttl=600,
        loopback_secret=LOOPBACK_SECRET,
        version="test",
        metrics=metrics,
    )
    return Harness(server, registry, registrar, gate, audit, probe, nonces, sessions, notifier, token)
