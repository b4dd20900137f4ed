"""The person's changes on the one audit trail: a change a person makes through the REST API, the command line or the
console is a `ManagementCall` record as the AI's calls are, with the same masking, outcome and chain, so the Safety
screen and `saip_monitor_management_log` tell the whole story.

Its tool, category, level, summary and arguments are those of the management tool whose method the request reached
(`surface.declare.reaching`: the REST API calls the same methods); a route of the gateway's own (the MCP token, an
answer in the inbox) is named by its method and path. The caller is the person (`operator` person) and the interface
the request came through (`rest.interface_of`). Reads stay unrecorded: a GET, and a POST that reaches a READ tool (a
search, a risk check, a plan). A deliberate extension of the seed, whose trail holds the AI's calls (docs/audit.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from saip.common import names
from saip.gateway.errors import InvalidArguments, LiteralSecret
from saip.gateway.surface.audited import Auditor, ManagementToolCall
from saip.gateway.surface.declare import Reached
from saip.gateway.surface.management import Approval, Caller, Level, Outcome

READS = frozenset({"GET", "HEAD", "OPTIONS"})
# A change through a route of the gateway's own (no management tool): its category, and its level by method.
OWN = "gateway"
UNRECORDED = frozenset({401})  # no admin token: nobody proven to be the person


@dataclass(frozen=True)
class Change:
    """One request of the person's, as the trail keeps it."""

    method: str
    route: str  # the route's template, under /api/v1
    interface: str
    reached: Reached | None  # the management tool its route's method is, if any
    params: dict[str, Any]  # the path's parameters: what a route of the gateway's own was given
    started: float

    @property
    def recorded(self) -> bool:
        """Whether it changes something: not a read."""
        if self.method in READS:
            return False
        return self.reached is None or self.reached.level is not Level.READ

    def call(self) -> ManagementToolCall:
        reached = self.reached
        caller = Caller(client_name=names.PERSON, operator=names.PERSON, interface=self.interface)
        if reached is not None:
            given = reached.arguments.model_dump(mode="json", exclude_unset=True) if reached.arguments else {}
            call = ManagementToolCall(
                reached.tool, caller, given, self.started, category=reached.category, level=reached.level
            )
            call.approval = Approval(reached.level, reached.summary)
            return call
        level = Level.DESTRUCTIVE if self.method == "DELETE" else Level.WRITE
        tool = f"{self.method} {self.route}"
        call = ManagementToolCall(tool, caller, dict(self.params), self.started, category=OWN, level=level)
        call.approval = Approval(level, tool)
        return call


def outcome_of(status: int, ok: bool, error: Exception | None) -> Outcome:
    """How a person's request ended, in the words of the gate's outcomes: a rule that refused before anything ran (an
    invalid request, a literal secret) is REFUSED, as for the AI; any other failure is ERROR."""
    if isinstance(error, InvalidArguments | LiteralSecret) or status == 422:
        return Outcome.REFUSED
    return Outcome.OK if status < 400 and ok else Outcome.ERROR


class PersonTrail:
    """Records the person's changes through the gateway's auditor (set once the gateway runs)."""

    def __init__(self) -> None:
        self.auditor: Auditor | None = None

    async def record(
        self, change: Change, status: int, envelope: dict[str, Any], error: Exception | None
    ) -> str | None:
        """Record one change (nothing for a read, or before the gateway runs); a warning when the record could not be
        stored durably, for the answer."""
        if self.auditor is None or not change.recorded or status in UNRECORDED:
            return None
        outcome = outcome_of(status, bool(envelope.get("ok")), error)
        return await self.auditor.record(change.call(), str(envelope.get("message") or ""), outcome)
