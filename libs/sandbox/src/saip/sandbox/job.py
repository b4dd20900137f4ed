"""One call of tool code: the job (the code, its globals, its limits), what came of it, and the sandbox's own
refusal reasons. Jobs and outcomes cross the process boundary as JSON, never pickled: a worker whose engine failed
to contain the code still cannot make the service run code by what it answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from saip.common.netguard import Binding

# Bounded labels of what the sandbox itself refused (the network guard's reasons come from saip.common.netguard).
TIME_LIMIT = "time-limit"
MEMORY_LIMIT = "memory-limit"
FETCH_LIMIT = "fetch-limit"
RESULT_TOO_LARGE = "result-too-large"
WORKER_CRASHED = "worker-crashed"
GUARD_REASONS = (TIME_LIMIT, MEMORY_LIMIT, FETCH_LIMIT, RESULT_TOO_LARGE, WORKER_CRASHED)


@dataclass(frozen=True)
class Limits:
    """What every call on a pool runs under."""

    timeout: float = 30.0
    memory_bytes: int = 128 * 1024 * 1024
    console_cap: int = 1000
    max_result_chars: int = 1_000_000


@dataclass(frozen=True)
class Job:
    """One call: the code, its globals, and the limits it runs under. `secrets` never reach the engine: the globals
    carry their placeholders, and the sandbox's fetch substitutes each value into requests to the hosts it is bound
    to."""

    code: str
    arguments: dict[str, Any]
    statics: dict[str, str]
    network_mode: str = "blocked"
    hosts_allow: tuple[str, ...] = ()
    secrets: tuple[Binding, ...] = ()
    timeout: float = 30.0
    memory_bytes: int = 64 * 1024 * 1024
    console_cap: int = 1000
    max_result_chars: int = 1_000_000
    max_body: int = 10 * 1024 * 1024
    max_redirects: int = 5

    def to_wire(self) -> dict[str, Any]:
        """The job as JSON-ready data, each field as it is (asdict's deep copy of every field took more CPU than
        encoding the JSON, on both sides of every call)."""
        data = {name: getattr(self, name) for name in _JOB_FIELDS}
        data["secrets"] = [{"marker": item.marker, "value": item.value, "hosts": item.hosts} for item in self.secrets]
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Job:
        secrets = tuple(
            Binding(str(item["marker"]), str(item["value"]), tuple(item["hosts"])) for item in data.get("secrets", ())
        )
        return cls(**{**data, "hosts_allow": tuple(data.get("hosts_allow", ())), "secrets": secrets})


@dataclass
class Outcome:
    """What came of it: the result as JSON text, or the error; the console; what the guards refused; whether the
    call found its isolate ready (`warm`) or had to wait for one to be made."""

    ok: bool
    result_json: str = ""
    error: str = ""
    console: list[str] = field(default_factory=list)
    console_dropped: int = 0
    guard_blocks: list[tuple[str, str]] = field(default_factory=list)
    duration_ms: int = 0
    warm: bool = False

    def to_wire(self) -> dict[str, Any]:
        """The outcome as JSON-ready data, each field as it is (see `Job.to_wire`)."""
        return {name: getattr(self, name) for name in _OUTCOME_FIELDS}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Outcome:
        """An outcome as a worker sent it, each field converted to its type (the worker is not trusted)."""
        return cls(
            ok=data.get("ok") is True,
            result_json=str(data.get("result_json", "")),
            error=str(data.get("error", "")),
            console=[str(line) for line in data.get("console", ())],
            console_dropped=int(data.get("console_dropped", 0)),
            guard_blocks=[(str(reason), str(message)) for reason, message in data.get("guard_blocks", ())],
            duration_ms=int(data.get("duration_ms", 0)),
            warm=data.get("warm") is True,
        )


_JOB_FIELDS = tuple(item.name for item in fields(Job))
_OUTCOME_FIELDS = tuple(item.name for item in fields(Outcome))
