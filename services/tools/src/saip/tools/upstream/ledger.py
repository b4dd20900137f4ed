"""The fingerprint ledger of upstream tool definitions (docs/upstream.md, "The fingerprint ledger"), in saip-ledger.

A definition's fingerprint is the SHA-256 of the canonical JSON (sorted keys, compact) of its name, description,
input schema and annotations. The ledger is keyed `serverId::toolName`; NATS KV keys cannot hold `:` (nor most other
characters a tool name may have), so the stored key is `tool.` followed by the unpadded base64url of that UTF-8
string (`key`). First sight records ACTIVE; the same hash again changes nothing; a different hash is
AWAITING_REREVIEW with the changed fields and a `hash-ledger-mismatch` risk event, and the tool leaves /mcp (every
gateway lists again on the bucket's change) until the person accepts the new definition, an acceptance that names
the hash it was shown (`accept` refuses any other).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from saip.common import timestamps
from saip.common.canonical import canonical_json, sha256_of
from saip.common.risk import WARN
from saip.tools.errors import Conflict, RuleRefused
from saip.tools.metrics import ToolsMetrics
from saip.tools.ports import Records, RiskSink
from saip.v1 import upstream_pb2

HASH_LEDGER_MISMATCH = "hash-ledger-mismatch"
KEY_PREFIX = "tool."
RISK_PREFIX = "risk."  # a server's level and reasons as last raised (`Ledger.risk_changed`)
FIELDS = ("name", "description", "inputSchema", "annotations")
ACTIVE = upstream_pb2.FINGERPRINT_STATUS_ACTIVE
AWAITING = upstream_pb2.FINGERPRINT_STATUS_AWAITING_REREVIEW


def key(server_id: str, tool: str) -> str:
    """The bucket key of `serverId::toolName` (base64url: the alphabet NATS keys allow)."""
    return KEY_PREFIX + _encoded(f"{server_id}::{tool}")


def risk_key(server_id: str) -> str:
    """The bucket key of the server's risk as it was last raised."""
    return RISK_PREFIX + _encoded(server_id)


def _encoded(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Observed:
    """What a listing's definitions are in the ledger now, and which of them are news: seen for the first time, or a
    new definition now awaiting review, recorded by this very call (so by one replica, once, across restarts)."""

    rows: dict[str, upstream_pb2.LedgerRecord]
    news: frozenset[str]


def fingerprint(definition: dict[str, Any]) -> str:
    return sha256_of(definition)


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [field for field in FIELDS if before.get(field) != after.get(field)]


def diff(before: dict[str, Any], after: dict[str, Any], limit: int = 400) -> str:
    """A short before/after of each changed field, for the person's question."""
    lines = []
    for field in changed_fields(before, after):
        was, now = (_shown(value, limit) for value in (before.get(field), after.get(field)))
        lines.append(f"{field}: {was} -> {now}")
    return "\n".join(lines)


def as_tool(definition: dict[str, Any]) -> upstream_pb2.UpstreamTool:
    """An upstream tool from its definition (the ledger's and the connection's shape)."""
    annotations = definition.get("annotations") or {}
    return upstream_pb2.UpstreamTool(
        name=definition["name"],
        title=str(definition.get("title") or annotations.get("title") or ""),
        description=definition.get("description") or "",
        input_schema_json=canonical_json(definition.get("inputSchema") or {}),
        read_only=annotations.get("readOnlyHint") is True,
        destructive=annotations.get("destructiveHint") is True,
        idempotent=annotations.get("idempotentHint") is True,
        open_world=annotations.get("openWorldHint") is True,
        has_annotations=bool(annotations),
        read_only_set="readOnlyHint" in annotations,
        hash=fingerprint(definition),
    )


def _shown(value: Any, limit: int) -> str:
    return canonical_json(value)[:limit] if value is not None else "(none)"


class Ledger:
    def __init__(self, records: Records, risk: RiskSink, metrics: ToolsMetrics) -> None:
        self._records = records
        self._risk = risk
        self._metrics = metrics

    async def read(self, server_id: str, tool: str) -> upstream_pb2.LedgerRecord | None:
        stored = await self._records.get(key(server_id, tool))
        return upstream_pb2.LedgerRecord.FromString(stored[0]) if stored is not None else None

    async def observe(self, server_id: str, definitions: Iterable[dict[str, Any]]) -> Observed:
        """Record what the server lists now: each tool's ledger row, and which definitions this call recorded."""
        rows, news = {}, set()
        for definition in definitions:
            for attempt in range(3):
                try:
                    row, new = await self._observe_one(server_id, definition)
                    break
                except Conflict:
                    # Another replica recorded the same listing meanwhile: read its row and decide again.
                    if attempt == 2:
                        raise
            rows[definition["name"]] = row
            if new:
                news.add(definition["name"])
        return Observed(rows, frozenset(news))

    async def risk_changed(self, server_id: str, said: str) -> bool:
        """Whether `said` (the server's level and reasons) differs from what the ledger kept when it was last raised;
        if so it is kept now, so one replica, once, raises it, and a restart does not raise it again."""
        target, value = risk_key(server_id), said.encode()
        for _ in range(3):
            stored = await self._records.get(target)
            if stored is not None and stored[0] == value:
                return False
            try:
                if stored is None:
                    await self._records.create(target, value)
                else:
                    await self._records.update(target, value, stored[1])
            except Conflict:
                continue  # another replica kept its own meanwhile: compare with that
            return True
        return False

    async def _observe_one(self, server_id: str, definition: dict[str, Any]) -> tuple[upstream_pb2.LedgerRecord, bool]:
        name = definition["name"]
        digest = fingerprint(definition)
        stored = await self._records.get(key(server_id, name))
        now = timestamps.now()
        if stored is None:
            row = upstream_pb2.LedgerRecord(
                server_id=server_id,
                tool=name,
                hash=digest,
                definition_json=canonical_json(definition),
                status=ACTIVE,
                first_seen=now,
            )
            await self._write(row, 0)
            return row, True
        row = upstream_pb2.LedgerRecord.FromString(stored[0])
        if digest == row.hash:
            if row.status == AWAITING:  # changed back to the accepted definition: nothing to review any more
                row.status, row.pending_hash, row.pending_definition_json = ACTIVE, "", ""
                del row.changed_fields[:]
                await self._write(row, stored[1])
            return row, False
        if digest == row.pending_hash:
            return row, False
        fields = changed_fields(json.loads(row.definition_json), definition)
        row.status = AWAITING
        row.pending_hash = digest
        row.pending_definition_json = canonical_json(definition)
        row.changed_at.CopyFrom(now)
        del row.changed_fields[:]
        row.changed_fields.extend(fields)
        await self._write(row, stored[1])
        self._metrics.ledger_mismatches.inc()
        await self._risk.publish(
            HASH_LEDGER_MISMATCH,
            WARN,
            f"The definition of '{name}' on upstream server '{server_id}' changed ({', '.join(fields)}); it is "
            "withheld from /mcp until the person accepts the new definition (saip_expose_apply, acknowledgeChanged).",
            reason=",".join(fields),
            subject=f"{server_id}::{name}",
        )
        return row, True

    async def accept(self, server_id: str, tool: str, expected_hash: str) -> upstream_pb2.LedgerRecord:
        """Make the pending definition the accepted one, if it still is the one the person was shown."""
        stored = await self._records.get(key(server_id, tool))
        row = upstream_pb2.LedgerRecord.FromString(stored[0]) if stored is not None else None
        if row is None or row.status != AWAITING:
            raise RuleRefused(
                f"'{tool}' on '{server_id}' is not awaiting re-review; there is no changed definition to accept."
            )
        if row.pending_hash != expected_hash:
            raise Conflict(
                f"The definition of '{tool}' on '{server_id}' changed again after the person was asked (the approval "
                f"described {expected_hash[:12]}, the upstream now lists {row.pending_hash[:12]}); plan the "
                "acknowledgement again with saip_expose_preview and ask again."
            )
        assert stored is not None
        row.hash, row.definition_json = row.pending_hash, row.pending_definition_json
        row.status, row.pending_hash, row.pending_definition_json = ACTIVE, "", ""
        del row.changed_fields[:]
        await self._write(row, stored[1])
        return row

    async def _write(self, row: upstream_pb2.LedgerRecord, revision: int) -> None:
        payload = row.SerializeToString()
        target = key(row.server_id, row.tool)
        if revision:
            await self._records.update(target, payload, revision)
        else:
            await self._records.create(target, payload)
