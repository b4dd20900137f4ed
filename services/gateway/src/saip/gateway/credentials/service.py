"""The person's methods over the clients /mcp accepts (REST /api/v1/clients, `saip clients`, the console): the list
of every credential with its use, a named static token made for one client, and the revocation of any credential.

A named token is shown once, when it is made, and kept as its SHA-256 only. Revoking a credential deletes its record:
every replica refuses it from the moment its watch brings the deletion. The shared token is the seed's
(`auth.TokenService`): revoking it removes it, unless it is set in configuration.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from saip.common.tokens import token_hash
from saip.common.words import plural
from saip.gateway.auth import TokenService
from saip.gateway.credentials.identity import KIND_WORDS, SHARED_ID, Grant, Kind
from saip.gateway.credentials.registry import SHARED_NAME, CredentialRegistry
from saip.gateway.credentials.store import Records
from saip.gateway.credentials.usage import Summary, Usage, summed
from saip.gateway.errors import ServiceConflict, ServiceNotFound
from saip.gateway.surface.management import ManagementResult
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

NO_SUCH = "There is no client '{id}'; saip clients list shows their ids."
TAKEN = "A named token '{name}' exists already (id {id}); revoke it first, or choose another name."
KIND_ORDER = {Kind.SHARED: 0, Kind.NAMED: 1, Kind.OAUTH: 2}


def _when(moment: float | None) -> str | None:
    return datetime.fromtimestamp(moment, UTC).isoformat() if moment else None


class Clients:
    def __init__(
        self,
        *,
        registry: CredentialRegistry,
        tokens: TokenService,
        named: Records[gateway_pb2.CredentialRecord],
        grants: Records[gateway_pb2.CredentialRecord] | None,
        sightings: Records[gateway_pb2.CredentialSeen],
        counts: Records[gateway_pb2.CredentialUsage],
        usage: Usage,
        changed: Callable[[], Awaitable[object]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`grants` None: OAuth is off. `changed` when the named tokens changed (the surface may turn on or off)."""
        self._registry = registry
        self._tokens = tokens
        self._named = named
        self._grants = grants
        self._sightings = sightings
        self._counts = counts
        self._usage = usage
        self._changed = changed
        self._clock = clock

    async def listing(self) -> ManagementResult:
        now = self._clock()
        seen = {name: sighting.first_seen for name, sighting in (await self._sightings.all()).items()}
        use = summed((await self._counts.all()).items(), seen, now)
        clients: list[dict[str, Any]] = []
        shared = self._registry.shared
        if shared.is_set:
            entry: dict[str, Any] = {
                "id": SHARED_ID,
                "kind": Kind.SHARED.value,
                "name": SHARED_NAME,
                "grant": Grant.MANAGE.value,
            }
            entry |= {"client": None, "source": shared.source, "createdAt": None}
            clients.append(entry | _use(use.get(SHARED_ID)))
        for record in self._registry.records.values():
            if record.kind == Kind.OAUTH and record.expires_at <= now:
                continue  # its last refresh token is over: the grant ages out of the bucket
            clients.append(_client(record) | _use(use.get(record.id)))
        clients.sort(key=lambda client: (KIND_ORDER[Kind(client["kind"])], client["name"], client["id"]))
        message = f"{plural(len(clients), 'client')} can call /mcp."
        return ManagementResult(True, message, data={"clients": clients})

    async def add(self, name: str, grant: Grant, created_by: str) -> ManagementResult:
        existing = self._registry.named_with(name)
        if existing is not None:
            raise ServiceConflict(TAKEN.format(name=name, id=existing.id))
        token = secrets.token_urlsafe(32)
        record = gateway_pb2.CredentialRecord(
            id=secrets.token_hex(6),
            kind=Kind.NAMED.value,
            name=name,
            grant=grant.value,
            token_sha256=token_hash(token),
            created_by=created_by,
        )
        record.created_at.GetCurrentTime()
        await self._named.create(record.id, record)
        if self._registry.apply(record):  # this replica accepts it at once; the others when their watch brings it
            await self._changed()
        logger.info("named token made", extra={"credential": record.id, "grant": grant.value})
        message = (
            f"Made a named token for '{name}' (id {record.id}, grant '{grant.value}'). It is shown this once: give "
            "it to that client as 'Authorization: Bearer <token>'."
        )
        return ManagementResult(True, message, persisted=True, data={"token": token, "client": _client(record)})

    async def revoke(self, credential_id: str) -> ManagementResult:
        if credential_id == SHARED_ID and self._registry.shared.is_set:
            await self._tokens.remove()  # a token set in configuration: TokenManagedByConfiguration says so
            removed = f"Revoked the {SHARED_NAME}: every replica refuses it now."
        else:
            record = self._registry.records.get(credential_id)
            store = self._named if record is not None and record.kind == Kind.NAMED else self._grants
            if record is None or store is None or not await store.delete(credential_id):
                raise ServiceNotFound(NO_SUCH.format(id=credential_id))
            if self._registry.remove(credential_id):  # refused here at once; elsewhere when the watch brings it
                await self._changed()
            removed = f"Revoked {record.name} ({KIND_WORDS[Kind(record.kind)]}): every replica refuses it now."
        self._usage.forget(credential_id)
        await self._sightings.delete(credential_id)
        logger.info("credential revoked", extra={"credential": credential_id})
        return ManagementResult(True, removed, persisted=True, data={"revoked": credential_id})


def _client(record: gateway_pb2.CredentialRecord) -> dict[str, Any]:
    oauth = record.kind == Kind.OAUTH
    return {
        "id": record.id,
        "kind": record.kind,
        "name": record.name,
        "grant": record.grant,
        "client": {"id": record.client_id, "host": record.client_host} if oauth else None,
        "source": record.created_by,
        "createdAt": record.created_at.ToJsonString() if record.created_at.seconds else None,
    }


def _use(summary: Summary | None) -> dict[str, Any]:
    summary = summary or Summary()
    return {
        "firstSeen": _when(summary.first_seen),
        "lastSeen": _when(summary.last_seen),
        "callsLastHour": summary.calls,
        "questionsLastHour": summary.questions,
    }
