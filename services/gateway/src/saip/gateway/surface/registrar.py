"""The registrar: which saip_* tools, resources and prompts /mcp offers, recomputed on every credential or tool-set
change (the surface is on while /mcp asks for a credential: the shared token, a named token or OAuth).

The first blocker that matches turns the management surface off and becomes the reason the person sees
(GET /api/v1/management/status, saip_monitor_overview). With none, every contribution of an enabled category is
registered, minus the excluded names, each guide also as an Agent Skill (`surface.skills`), and the clients are told
with list_changed: `refresh` answers once the registry holds the new set, and the notifier tells the sessions after,
in a task of its own (`mcp_server.ListChangedNotifier`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from saip.gateway.config import ApprovalMode, Transport
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.approval import Interaction
from saip.gateway.surface.gate import Gate, GateResult
from saip.gateway.surface.management import Caller, Contribution, ManagementTool
from saip.gateway.surface.registry import MANAGEMENT, Changes, Registry, ServedSet, ServedTool
from saip.gateway.surface.skills import guide_skills

logger = logging.getLogger(__name__)

BUNDLE_FILE = "saip-bundle.json"

DISABLED = "disabled by management.enabled=false"
SHIPPED_BUNDLE = "not offered by a shipped server bundle (a shipped server never carries management tools)"
STDIO = "not offered in stdio mode"
# The seed's words, for the blocker it names: /mcp asks for no credential (no shared token, no named token, no OAuth).
NO_TOKEN = "no bearer token on the built-in server"


def described(status: Mapping[str, Any]) -> str:
    """The surface in words (the overview, the status): on with how many management tools, or off and why."""
    if status["surface"]:
        return f"on with {len(status['tools'])} management tools"
    return f"off ({status['reason']})"


class Notifier(Protocol):
    """Takes note of a change for the clients; returns without waiting for any of them."""

    async def changed(self, changes: Changes) -> None: ...


@dataclass(frozen=True)
class Policy:
    """The configuration the registrar reads: the master switch, the categories, the exclusions."""

    enabled: bool
    categories: frozenset[str]
    exclude: frozenset[str]
    transport: Transport
    home: Path
    approval: ApprovalMode
    wait_seconds: float


@dataclass(frozen=True)
class ManagementStatus:
    surface: bool
    reason: str | None
    approval: str
    approval_wait_seconds: float
    categories: list[str]
    tools: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["approvalWaitSeconds"] = data.pop("approval_wait_seconds")
        return data


class Registrar:
    def __init__(
        self,
        *,
        policy: Policy,
        contributions: Sequence[Contribution],
        authenticated: Callable[[], bool],
        gate: Gate,
        registry: Registry,
        notifier: Notifier,
        metrics: GatewayMetrics,
    ) -> None:
        self._policy = policy
        self._metrics = metrics
        self._contributions = contributions
        self._authenticated = authenticated
        self._gate = gate
        self._registry = registry
        self._notifier = notifier
        self._lock = anyio.Lock()
        self.status = ManagementStatus(False, "not refreshed yet", policy.approval.value, policy.wait_seconds, [])

    def blocker(self) -> str | None:
        """The first blocker that matches, in the order the specification gives."""
        if not self._policy.enabled:
            return DISABLED
        if (self._policy.home / BUNDLE_FILE).exists():
            return SHIPPED_BUNDLE
        if self._policy.transport is Transport.STDIO:
            return STDIO
        if not self._authenticated():
            return NO_TOKEN
        return None

    def wanted(self) -> ServedSet:
        served = ServedSet()
        for contribution in self._contributions:
            if contribution.category not in self._policy.categories:
                continue
            for tool in contribution.tools():
                if tool.name not in self._policy.exclude:
                    served.tools[tool.name] = ServedTool(tool.definition(), self._through_gate(tool))
            served.resources.update({r.uri: r for r in contribution.resources()})
            served.templates.update({t.uri_template: t for t in contribution.resource_templates()})
            served.prompts.update({p.name: p for p in contribution.prompts()})
        served.skills.update(guide_skills(served.resources))
        return served

    def _through_gate(self, tool: ManagementTool) -> Callable[..., Any]:
        async def call(arguments: dict[str, Any] | None, caller: Caller, interaction: Interaction) -> GateResult:
            return await self._gate.execute(tool, arguments, caller, interaction)

        return call

    async def refresh(self) -> ManagementStatus:
        async with self._lock:
            reason = self.blocker()
            served = ServedSet() if reason else self.wanted()
            changes = self._registry.replace(MANAGEMENT, served)
            self.status = ManagementStatus(
                surface=reason is None,
                reason=reason,
                approval=self._policy.approval.value,
                approval_wait_seconds=self._policy.wait_seconds,
                categories=sorted(self._policy.categories),
                tools=sorted(served.tools),
                resources=sorted([*served.resources, *served.templates]),
                prompts=sorted(served.prompts),
            )
            self._metrics.surface_on.set(1 if reason is None else 0)
            if changes.any:
                logger.info(
                    "management surface changed",
                    extra={"surface": reason is None, "reason": reason, "tools": len(served.tools)},
                )
                await self._notifier.changed(changes)
            return self.status
