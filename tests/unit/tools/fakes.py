"""In-memory fakes of Tool Studio's ports (it holds no tests itself): a record store that numbers its writes as a NATS
bucket does, a runner that answers from a script instead of running the code in the sandbox, and a risk sink that
keeps what it was sent; and the studio's parts wired over them, as the service wires them over the real ones."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from saip.common.masking import Masker
from saip.common.netguard import Binding
from saip.common.secret_source import Secret, SecretSource
from saip.tools import spec as specs
from saip.tools.config import SECRETS_KEY
from saip.tools.errors import Conflict
from saip.tools.exposure import ExposureSetting
from saip.tools.library import Library
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import Job, Outcome
from saip.tools.published import Published
from saip.tools.runs import Runs
from saip.tools.spec import ToolSpec
from saip.tools.studio import Studio
from saip.v1 import common_pb2
from tests.unit.tools.specs import document

DECLARED_KEY = "tools.declared"


class MemoryRecords:
    """Values by key; one revision counter for the whole store, and every write checked against the revision read."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[bytes, int]] = {}
        self._revision = 0

    def _next(self) -> int:
        self._revision += 1
        return self._revision

    def put(self, key: str, value: bytes) -> int:
        """A write from outside the studio (another build, a person with the nats CLI)."""
        revision = self._next()
        self.values[key] = (value, revision)
        return revision

    async def get(self, key: str) -> tuple[bytes, int] | None:
        return self.values.get(key)

    async def create(self, key: str, value: bytes) -> int:
        if key in self.values:
            raise Conflict(f"'{key}' was created by someone else meanwhile; read it again.")
        return self.put(key, value)

    async def update(self, key: str, value: bytes, revision: int) -> int:
        self._expect(key, revision)
        return self.put(key, value)

    async def delete(self, key: str, revision: int) -> None:
        self._expect(key, revision)
        del self.values[key]

    async def keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.values if key.startswith(prefix))

    async def current(self) -> None:
        """Every write is in the dictionary as it returns: nothing to wait for."""

    def _expect(self, key: str, revision: int) -> None:
        if key not in self.values or self.values[key][1] != revision:
            raise Conflict(f"'{key}' changed since it was read (revision {revision}); read it again.")


@dataclass
class ScriptedRunner:
    """Answers a run with the outcome scripted for its code; unscripted code succeeds with its arguments as the
    result. `during` runs inside each run (what happens elsewhere while the code runs)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    during: Callable[[], Awaitable[None]] | None = None

    def job(
        self,
        code: str,
        arguments: dict[str, object],
        statics: dict[str, str],
        *,
        network_mode: str,
        hosts_allow: tuple[str, ...],
        secrets: tuple[Binding, ...] = (),
    ) -> Job:
        return Job(
            code, dict(arguments), dict(statics), network_mode=network_mode, hosts_allow=hosts_allow, secrets=secrets
        )

    async def run(self, job: Job) -> Outcome:
        self.jobs.append(job)
        if self.during is not None:
            await self.during()
        return self.outcomes.get(job.code) or Outcome(ok=True, result_json=json.dumps(job.arguments | job.statics))


@dataclass(frozen=True)
class Raised:
    """One risk event as the sink received it, its summary masked as the publisher masks it."""

    kind: str
    severity: common_pb2.Severity
    summary: str
    reason: str
    subject: str


@dataclass
class RecordedRisks:
    events: list[Raised] = field(default_factory=list)

    async def publish(
        self,
        kind: str,
        severity: common_pb2.Severity,
        summary: str,
        *,
        reason: str = "",
        subject: str = "",
        masker: Masker | None = None,
    ) -> bool:
        shown = masker.text(summary) if masker is not None else summary
        self.events.append(Raised(kind, severity, shown, reason, subject))
        return True

    def of(self, kind: str) -> list[Raised]:
        return [event for event in self.events if event.kind == kind]


@dataclass
class Parts:
    """Tool Studio over the fakes: the parts the servicer calls, and the fakes to look into."""

    studio: Studio
    exposure: ExposureSetting
    published: Published
    records: MemoryRecords
    runner: ScriptedRunner
    risks: RecordedRisks
    metrics: ToolsMetrics


def studio(
    *,
    bundled: Mapping[str, ToolSpec] | None = None,
    declared: Mapping[str, ToolSpec] | None = None,
    secrets: Mapping[str, Secret] | None = None,
) -> Parts:
    """The parts wired as `saip.tools.server.lifespan` wires them; `secrets` is what tools.secrets holds."""
    records, runner, risks = MemoryRecords(), ScriptedRunner(), RecordedRisks()
    metrics = ToolsMetrics(CollectorRegistry())
    library = Library(
        records=records,
        bundled=bundled or {},
        declared=declared or {},
        declared_key=DECLARED_KEY,
        secrets=SecretSource({} if secrets is None else secrets, SECRETS_KEY),
    )
    exposure = ExposureSetting(library, metrics)
    runs = Runs(runner, risks, metrics)
    return Parts(
        Studio(library, exposure, runs, risks, metrics),
        exposure,
        Published(library, exposure, runs),
        records,
        runner,
        risks,
        metrics,
    )


def tool(name: str = "adder", **changes: Any) -> ToolSpec:
    """A parsed spec (tests.unit.tools.specs.document with `changes`)."""
    return specs.parse(document(name, **changes))
