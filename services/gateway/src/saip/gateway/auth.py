"""The shared MCP token (the seed's mcp-server.auth-token): a hash shared by every replica through NATS.

It is configured (read-only to the API) or generated, rotated and removed by the person; every replica watches the
record and applies it, so a change reaches all of them. It is one of the credentials /mcp accepts
(`saip.gateway.credentials`), with the management grant.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from saip.common.tokens import fingerprint, token_hash
from saip.gateway.errors import TokenManagedByConfiguration
from saip.gateway.metrics import GatewayMetrics

logger = logging.getLogger(__name__)

CONFIGURATION = "configuration"


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


@dataclass(frozen=True)
class TokenRecord:
    sha256_hex: str
    created_at: datetime
    created_by: str


class TokenState:
    """The token /mcp requires right now; compared in constant time, never kept in plain text."""

    def __init__(self, configured: str | None) -> None:
        self.configured = configured is not None
        self._hash: str | None = token_hash(configured) if configured else None
        self.record: TokenRecord | None = None

    @property
    def is_set(self) -> bool:
        return self._hash is not None

    @property
    def fingerprint(self) -> str | None:
        return fingerprint(self._hash) if self._hash else None

    @property
    def source(self) -> str | None:
        if self.configured:
            return CONFIGURATION
        return self.record.created_by if self.record else None

    def matches(self, presented: str | None) -> bool:
        return presented is not None and self.holds(token_hash(presented))

    def holds(self, hashed: str) -> bool:
        """Whether a token of this SHA-256 (hex) is the one /mcp requires."""
        expected = self._hash
        return expected is not None and hmac.compare_digest(hashed, expected)

    def apply(self, record: TokenRecord | None) -> bool:
        """Take a record from the shared store; True when what /mcp requires changed. A configured token wins."""
        if self.configured:
            return False
        new_hash = record.sha256_hex if record else None
        changed = new_hash != self._hash
        self._hash, self.record = new_hash, record
        return changed


class TokenRecords(Protocol):
    """Where the token record lives (the NATS KV bucket saip-auth)."""

    async def put(self, record: TokenRecord) -> None: ...

    async def delete(self) -> None: ...


class TokenService:
    """The person's token methods (REST API and `saip token`), the same for every replica."""

    def __init__(
        self,
        state: TokenState,
        records: TokenRecords,
        on_change: Callable[[], Awaitable[object]],
        metrics: GatewayMetrics,
    ) -> None:
        self.state = state
        self._records = records
        self._on_change = on_change
        self._metrics = metrics

    async def rotate(self, created_by: str) -> str:
        """A new random token, stored as its hash; the plain token is returned once and never kept."""
        if self.state.configured:
            raise TokenManagedByConfiguration()
        token = secrets.token_urlsafe(32)
        record = TokenRecord(token_hash(token), datetime.now(UTC), created_by)
        await self._records.put(record)
        await self.applied(record)
        return token

    async def remove(self) -> None:
        if self.state.configured:
            raise TokenManagedByConfiguration()
        await self._records.delete()
        await self.applied(None)

    async def applied(self, record: TokenRecord | None) -> None:
        """A record arrived (from this replica or through the watch): apply it, refresh the surface if it changed."""
        if self.state.apply(record):
            self._metrics.token_changes.labels("set" if record else "removed").inc()
            logger.info("mcp token changed", extra={"token_set": record is not None})
            await self._on_change()
