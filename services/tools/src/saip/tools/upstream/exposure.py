"""The composition: which upstream tools saip serves on its /mcp, under which names, with or without HITL.

One record `exposure` in the saip-servers bucket (`Composition`), written with the revision it read. `plan` is the
dry run (what would be added and under which names, which tools would run without human approval, which are
refused and why, which changed definitions an acknowledgement would accept, with their diff and hash) and `apply`
is the same plan, then the write; the AI, the REST API and the command line reach the same two.

The rules: a member's inherent level above the cap (`expose.risk-cap`, L3) is refused, HITL or not, and a member whose
level comes to be above it (a new definition accepted, its server's trust or docs changed, the cap lowered) is
withheld with the same sentence while it is; a name starting
with `saip_`, or taken by another member or by any tool /mcp serves elsewhere, is refused; a tool whose input schema
is not a valid JSON Schema is refused and never served, since no client could form its arguments; a tool whose
definition tripped the poisoning scan always asks. A member is served only while its server is registered and its
ledger row is ACTIVE; a changed definition is withheld until `acknowledge_changed` accepts it, bound to the hash the
person saw.

A call finds its member with `named`, which reuses the member's last composition while nothing it was made of has
changed (the composition's record, the server's record and revision, the ledger row, the other names): composing
checks the input schema against the JSON Schema meta-schema and runs the poisoning scan, the largest part of saip's
own CPU in a proxied call if made at every call (docs/BENCHMARKS.md, "Where a proxied call's time goes"), for what
is the same answer until one of those records changes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from saip.common.risk import INFO
from saip.common.words import RESERVED_PREFIX, is_reserved
from saip.tools.errors import Conflict, RuleRefused, ServerNotFound
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import Records, RiskSink
from saip.tools.upstream import ledger as ledgers
from saip.tools.upstream import risk
from saip.tools.upstream.servers import Servers
from saip.v1 import upstream_pb2

EXPOSURE_KEY = "exposure"
COMPOSITION_LIFECYCLE = "composition-lifecycle"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


def name_of(member: upstream_pb2.Member) -> str:
    return member.alias or member.tool


def above_cap(level: int, cap: int) -> str:
    return f"Inherent risk L{level} is above the cap L{cap} (HITL does not lift the cap)"


def schema_problem(server_id: str, tool: str, schema: Any) -> str:
    """Why a tool's input schema cannot be served (empty when it can). The SDK's own types admit only `type: object`
    there; what they let through must also be a valid JSON Schema."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path) or "the top level"
        return (
            f"the input schema of '{tool}' on server '{server_id}' is not a JSON Schema (at {where}: "
            f"{exc.message[:200]}); saip does not serve it until the server lists a valid one"
        )
    return ""


@dataclass(frozen=True)
class Composed:
    """One member with everything known of it: its server, its accepted definition, its risk, whether it is served."""

    member: upstream_pb2.Member
    server: upstream_pb2.Server | None
    row: upstream_pb2.LedgerRecord | None
    tool: upstream_pb2.UpstreamTool | None
    inherent: int
    poisoning: tuple[str, ...]
    withheld: str  # empty when served

    @property
    def name(self) -> str:
        return name_of(self.member)

    @property
    def asks(self) -> bool:
        return self.member.hitl or bool(self.poisoning)

    @property
    def effective(self) -> int:
        return risk.effective(self.inherent, hitl=self.member.hitl, poisoned=bool(self.poisoning))


class Composer:
    def __init__(
        self, records: Records, servers: Servers, risk_sink: RiskSink, metrics: ToolsMetrics, cap: int
    ) -> None:
        self._records = records
        self._servers = servers
        self._risk = risk_sink
        self._metrics = metrics
        self.cap = cap
        # The last composition of each name `named` served, with what it was made of (`_inputs`).
        self._reused: dict[str, tuple[tuple[bytes, tuple[str, ...], int, bytes], Composed]] = {}

    async def read(self) -> tuple[upstream_pb2.Composition, int]:
        stored = await self._records.get(EXPOSURE_KEY)
        if stored is None:
            return upstream_pb2.Composition(), 0
        return upstream_pb2.Composition.FromString(stored[0]), stored[1]

    async def composed(
        self, member: upstream_pb2.Member, names: list[str] | None = None, *, reuse: bool = False
    ) -> Composed:
        """A member with its server, its ledger row and its risk (`names`: the other tools of its server, for the
        scan's tool-redirect rule); `reuse`: the last one made of the same records, if any (`named`)."""
        try:
            server = await self._servers.registry.get(member.server_id)
        except ServerNotFound:
            return Composed(member, None, None, None, 5, (), f"its server '{member.server_id}' is not registered")
        row = await self._servers.ledger.read(member.server_id, member.tool)
        if row is None:
            withheld = f"'{member.tool}' has not been listed by '{member.server_id}' yet"
            return Composed(member, server, None, None, 5, (), withheld)
        inputs = _inputs(member, names, server, row) if reuse else None
        last = self._reused.get(name_of(member)) if inputs is not None else None
        if last is not None and last[0] == inputs:
            return last[1]
        try:
            server_score = await self._servers.score(server)
        except RuleRefused as exc:  # not kept: where the server's address leads is looked up again next time
            return Composed(member, server, row, ledgers.as_tool(json.loads(row.definition_json)), 5, (), str(exc))
        entry = self._derived(member, names, server, row, server_score)
        if inputs is not None:
            self._reused[name_of(member)] = (inputs, entry)
        return entry

    def _derived(
        self,
        member: upstream_pb2.Member,
        names: list[str] | None,
        server: upstream_pb2.Server,
        row: upstream_pb2.LedgerRecord,
        server_score: risk.Score,
    ) -> Composed:
        definition = json.loads(row.definition_json)
        tool = ledgers.as_tool(definition)
        level = risk.inherent(server_score, risk.tool_score(tool))
        hits = tuple(risk.poisoning(tool, names or ()))
        withheld = schema_problem(member.server_id, member.tool, definition.get("inputSchema"))
        if row.status == ledgers.AWAITING:
            withheld = (
                f"the upstream changed its definition ({', '.join(row.changed_fields)}); it is withheld until the "
                f"person accepts it: saip_expose_apply with acknowledgeChanged ['{name_of(member)}']"
            )
        elif not withheld and level.level > self.cap:
            withheld = above_cap(level.level, self.cap)
        return Composed(member, server, row, tool, level.level, hits, withheld)

    async def named(self, name: str) -> Composed | None:
        """The member served as `name`, composed: what one call needs, without composing every other member, and
        the same one again while the records it was made of are unchanged."""
        composition, _ = await self.read()
        names = [name_of(member) for member in composition.members]
        for gone in self._reused.keys() - set(names):  # removed members: nothing is kept for them
            del self._reused[gone]
        member = next((member for member in composition.members if name_of(member) == name), None)
        return await self.composed(member, names, reuse=True) if member is not None else None

    async def everything(self) -> tuple[list[Composed], int]:
        composition, revision = await self.read()
        names = [name_of(member) for member in composition.members]
        return [await self.composed(member, names) for member in composition.members], revision

    async def view(self) -> upstream_pb2.CompositionView:
        entries, revision = await self.everything()
        tools = []
        for entry in entries:
            live = self._servers.connections.live(entry.member.server_id)
            tools.append(
                upstream_pb2.ExposedTool(
                    member=entry.member,
                    name=entry.name,
                    inherent_level=entry.inherent,
                    effective_level=entry.effective,
                    served=not entry.withheld,
                    withheld=entry.withheld,
                    fingerprint=entry.row.status if entry.row else upstream_pb2.FINGERPRINT_STATUS_UNSPECIFIED,
                    upstream=live.state,
                    poisoning=entry.poisoning,
                    ledger_hash=entry.row.hash if entry.row else "",
                    definition_json=entry.row.definition_json if entry.row else "",
                )
            )
        return upstream_pb2.CompositionView(tools=tools, revision=revision, cap=self.cap)

    async def plan(self, change: upstream_pb2.ExposureChange, taken: list[str]) -> upstream_pb2.ExposurePlan:
        """The dry run of a change: nothing is written."""
        composition, revision = await self.read()
        plan = upstream_pb2.ExposurePlan(revision=revision, cap=self.cap)
        current = {name_of(member): member for member in composition.members}
        removing = set(change.remove)
        names = set(current) - removing
        for alias in change.remove:
            if alias in current:
                plan.removed.append(alias)
            else:
                plan.refused.add(name=alias, reason=f"'{alias}' is not exposed; saip_expose_get lists what is")
        for member in change.add:
            refusal = await self._refusal(member, names, set(taken))
            name = name_of(member)
            if isinstance(refusal, str):
                plan.refused.add(name=name, reason=refusal)
                continue
            names.add(name)
            plan.added.append(planned(refusal))
            plan.high_risk |= refusal.inherent >= 4
        for setting in change.set_hitl:
            if setting.alias not in current:
                plan.refused.add(name=setting.alias, reason=f"'{setting.alias}' is not exposed; add it first")
                continue
            member = upstream_pb2.Member()
            member.CopyFrom(current[setting.alias])
            member.hitl = setting.hitl
            entry = await self.composed(member, list(current))
            if not setting.hitl and entry.poisoning:
                reason = (
                    f"'{setting.alias}' tripped the poisoning scan ({', '.join(entry.poisoning)}), so every call of it "
                    "asks the person; its HITL cannot be switched off"
                )
                plan.refused.add(name=setting.alias, reason=reason)
                continue
            plan.hitl_changed.append(planned(entry))
        for alias in change.acknowledge_changed:
            acknowledgement = await self._acknowledgement(alias, current)
            if isinstance(acknowledgement, str):
                plan.refused.add(name=alias, reason=acknowledgement)
            else:
                plan.acknowledged.append(acknowledgement)
        return plan

    async def apply(
        self, change: upstream_pb2.ExposureChange, acknowledged_hashes: dict[str, str], taken: list[str]
    ) -> upstream_pb2.ExposureApplied:
        """The plan, then the write: nothing is applied while any part is refused."""
        plan = await self.plan(change, taken)
        if plan.refused:
            if any(refusal.reason.startswith("Inherent risk") for refusal in plan.refused):
                self._metrics.cap_refusals.inc()
            raise RuleRefused("; ".join(f"{refusal.name}: {refusal.reason}" for refusal in plan.refused) + ".")
        if change.expected_revision and change.expected_revision != plan.revision:
            raise Conflict(
                f"The exposure changed since revision {change.expected_revision} (it is at revision {plan.revision}); "
                "call saip_expose_preview again."
            )
        for acknowledgement in plan.acknowledged:
            expected = acknowledged_hashes.get(acknowledgement.name, "")
            if not expected:
                raise RuleRefused(
                    f"Accepting the new definition of '{acknowledgement.name}' needs the hash the person was shown; "
                    "plan it with saip_expose_preview and apply that plan."
                )
            await self._servers.ledger.accept(acknowledgement.server_id, acknowledgement.tool, expected)
        composition, revision = await self.read()
        if revision != plan.revision:
            raise Conflict("The exposure changed while this change was planned; call saip_expose_preview again.")
        hitl = {entry.name: entry.member.hitl for entry in plan.hitl_changed}
        members = []
        for kept in composition.members:
            if name_of(kept) in plan.removed:
                continue
            member = upstream_pb2.Member()  # a copy: compared with the composition read, to tell a change
            member.CopyFrom(kept)
            member.hitl = hitl.get(name_of(member), member.hitl)
            members.append(member)
        members.extend(entry.member for entry in plan.added)
        if members != list(composition.members) or plan.added or plan.removed:
            payload = upstream_pb2.Composition(members=members).SerializeToString()
            if revision:
                await self._records.update(EXPOSURE_KEY, payload, revision)
            else:
                await self._records.create(EXPOSURE_KEY, payload)
        summary = (
            f"Exposure applied: added {[entry.name for entry in plan.added]}, removed {list(plan.removed)}, HITL "
            f"changed {[entry.name for entry in plan.hitl_changed]}, accepted {[a.name for a in plan.acknowledged]}"
        )
        await self._risk.publish(COMPOSITION_LIFECYCLE, INFO, summary)
        return upstream_pb2.ExposureApplied(plan=plan, composition=await self.view())

    async def withdraw(self, server_id: str) -> list[str]:
        """A removed server's members leave the composition (so a later server of the same id is not exposed)."""
        composition, revision = await self.read()
        gone = [name_of(member) for member in composition.members if member.server_id == server_id]
        if gone:
            kept = [member for member in composition.members if member.server_id != server_id]
            await self._records.update(
                EXPOSURE_KEY, upstream_pb2.Composition(members=kept).SerializeToString(), revision
            )
        return gone

    async def _refusal(self, member: upstream_pb2.Member, names: set[str], taken: set[str]) -> Composed | str:
        """The member as it would be composed, or why it is refused."""
        name = name_of(member)
        if not member.server_id or not member.tool:
            return "a member names a server id and one of its tools"
        if is_reserved(name):
            return f"the name '{name}' starts with '{RESERVED_PREFIX}', reserved for saip's own tools; choose an alias"
        if not NAME.match(name):
            return f"'{name}' is not a usable tool name (letters, digits, '_', '-', '.'; at most 64); choose an alias"
        if name in names or name in taken:
            return f"the name '{name}' is served already; choose another alias"
        entry = await self.composed(member, [*names, name])
        if entry.server is None or entry.row is None or (entry.withheld and entry.row.status != ledgers.AWAITING):
            return entry.withheld
        if entry.inherent > self.cap:
            return above_cap(entry.inherent, self.cap)
        if entry.poisoning and not member.hitl:
            member.hitl = True  # a poisoning hit always asks the person, whatever was asked for
        return entry

    async def _acknowledgement(
        self, alias: str, current: dict[str, upstream_pb2.Member]
    ) -> upstream_pb2.Acknowledgement | str:
        member = current.get(alias)
        if member is None:
            return f"'{alias}' is not exposed; there is nothing to acknowledge"
        row = await self._servers.ledger.read(member.server_id, member.tool)
        if row is None or row.status != ledgers.AWAITING:
            return f"'{alias}' is not awaiting re-review; its definition has not changed"
        before, after = json.loads(row.definition_json), json.loads(row.pending_definition_json)
        return upstream_pb2.Acknowledgement(
            name=alias,
            server_id=member.server_id,
            tool=member.tool,
            changed_fields=row.changed_fields,
            diff=ledgers.diff(before, after),
            new_hash=row.pending_hash,
            poisoning=risk.poisoning(ledgers.as_tool(after), list(current)),
        )


def _inputs(
    member: upstream_pb2.Member, names: list[str] | None, server: upstream_pb2.Server, row: upstream_pb2.LedgerRecord
) -> tuple[bytes, tuple[str, ...], int, bytes] | None:
    """What a composition is made of, to tell whether the last one still holds; None for a server declared in
    configuration (revision 0), whose address is looked up again at every composition (`Servers.where`)."""
    if not server.revision:
        return None
    return member.SerializeToString(), tuple(names or ()), server.revision, row.SerializeToString()


def planned(entry: Composed) -> upstream_pb2.PlannedMember:
    return upstream_pb2.PlannedMember(
        name=entry.name,
        member=entry.member,
        inherent_level=entry.inherent,
        effective_level=entry.effective,
        without_approval=not entry.asks,
        poisoning=entry.poisoning,
    )
