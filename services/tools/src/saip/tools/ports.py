"""What Tool Studio's rules need from outside, as protocols: the record store (the saip-tools bucket, `clients.
WatchedRecords`), the runner of tool code (the JavaScript sandbox, `sandbox.Sandbox`) and the sink of risk events
(`saip.common.risk.RiskPublisher`). tests/unit/tools/fakes.py holds in-memory ones."""

from __future__ import annotations

from typing import Protocol

from saip.common.masking import Masker
from saip.common.netguard import Binding
from saip.sandbox.job import Job, Outcome
from saip.v1 import common_pb2

__all__ = ["Job", "Outcome", "Records", "RiskSink", "Runner"]


class Records(Protocol):
    """Values by key, each at a revision. A write names the revision it read: a create of a key that exists, or a
    write against a revision that moved on, raises Conflict, so nothing is overwritten implicitly."""

    async def get(self, key: str) -> tuple[bytes, int] | None:
        """The value and its revision; None when the key does not exist (or was deleted)."""
        ...

    async def create(self, key: str, value: bytes) -> int: ...
    async def update(self, key: str, value: bytes, revision: int) -> int: ...
    async def delete(self, key: str, revision: int) -> None: ...
    async def keys(self, prefix: str) -> list[str]:
        """The keys that start with `prefix`, sorted."""
        ...

    async def current(self) -> None:
        """Returns once reads show every write the store had taken when this was called."""
        ...


class Runner(Protocol):
    """Runs tool code: `job` builds one call under the runner's limits, `run` runs it and returns what came of it
    (it never raises for what the code does)."""

    # The signature of `sandbox.Sandbox.job`, the adapter: a port and its adapter declare the same call.
    def job(
        self,
        code: str,
        arguments: dict[str, object],
        statics: dict[str, str],
        *,
        network_mode: str,
        hosts_allow: tuple[str, ...],
        secrets: tuple[Binding, ...] = (),
    ) -> Job: ...

    async def run(self, job: Job) -> Outcome: ...


class RiskSink(Protocol):
    """Where risk events go; returns whether the event was stored."""

    async def publish(
        self,
        kind: str,
        severity: common_pb2.Severity,
        summary: str,
        *,
        reason: str = "",
        subject: str = "",
        masker: Masker | None = None,
    ) -> bool: ...
