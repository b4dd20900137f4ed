"""Who may call /mcp on one gateway replica, wired: the credentials it accepts (followed from NATS), where its
requests come to, each credential's use, the person's list, and (oauth.enabled) the authorization server. Built
without I/O with the replica, opened with its NATS connection."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from nats.js import JetStreamContext
from starlette.requests import Request

from saip.common import concurrently, jetstream, names
from saip.gateway.auth import TokenService, TokenState
from saip.gateway.config import GatewaySettings
from saip.gateway.credentials import store
from saip.gateway.credentials.identity import Kind
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.credentials.service import Clients
from saip.gateway.credentials.usage import Usage
from saip.gateway.errors import ServiceUnavailable
from saip.gateway.oauth.authority import Authority
from saip.gateway.oauth.consent import Consent
from saip.gateway.oauth.origin import MCP_PATH, Origins
from saip.gateway.oauth.service import OAuth
from saip.gateway.oauth.tokens import AccessTokens
from saip.v1 import gateway_pb2

USAGE_KEPT = timedelta(hours=2)  # each replica's counts of a credential's use outlive the hour the list shows
NOT_OPEN = "the gateway has not opened its buckets yet"

Follow = Callable[[], Awaitable[None]]
Refresh = Callable[[], Awaitable[object]]


class ClientAccess:
    def __init__(self, settings: GatewaySettings, tokens: TokenState) -> None:
        self.settings = settings
        # OAuth on: access tokens are signed with a key derived from the sealing key every replica shares.
        self.signing = (
            AccessTokens(settings.approval_sealing_key.get_secret_value(), settings.oauth_access_token_seconds)
            if settings.oauth_enabled
            else None
        )
        self.credentials = CredentialRegistry(tokens, self.signing, self._grant)
        self.origins = Origins(settings.gateway_public_url, settings.gateway_allowed_hosts)
        self.usage = Usage(settings.gateway_replica)
        self.oauth: OAuth | None = None
        self._clients: Clients | None = None
        self._named: store.Records[gateway_pb2.CredentialRecord]
        self._sightings: store.Records[gateway_pb2.CredentialSeen]
        self._counts: store.Records[gateway_pb2.CredentialUsage]

    async def open(self, js: JetStreamContext, token_service: TokenService, refresh: Refresh) -> None:
        """Open the buckets (and the authorization server's), and take in the named tokens there are, so the
        surface's first state counts them; `refresh` when the person changes them here."""
        replicas = self.settings.nats_replicas
        clients_kv, usage_kv = await concurrently.both(
            lambda: jetstream.ensure_kv(js, names.CLIENTS_BUCKET, replicas=replicas),
            lambda: jetstream.ensure_kv(js, names.USAGE_BUCKET, ttl=USAGE_KEPT, replicas=replicas),
        )
        self._named = store.credentials(clients_kv)
        self._sightings, self._counts = store.sightings(clients_kv), store.usage(usage_kv)
        if self.signing is not None:
            self.oauth = await OAuth.opened(js, clients_kv, self.credentials, self.signing, self.settings)
        self._clients = Clients(
            registry=self.credentials,
            tokens=token_service,
            named=self._named,
            grants=self.oauth.records.grants if self.oauth is not None else None,
            sightings=self._sightings,
            counts=self._counts,
            usage=self.usage,
            changed=refresh,
        )
        for record in (await self._named.all()).values():
            self.credentials.apply(record)

    def watches(self, refresh: Refresh) -> list[tuple[Follow, str]]:
        """The watches that keep this replica's credentials current; `refresh` when the named tokens changed."""
        follow = self.credentials.follow
        watches: list[tuple[Follow, str]] = [(functools.partial(follow, self._named, Kind.NAMED, refresh), "named")]
        if self.oauth is not None:
            watches.append((functools.partial(follow, self.oauth.records.grants, Kind.OAUTH, refresh), "grants"))
        return watches

    async def count_forever(self) -> None:
        """Write this replica's counts of each credential's use, every few seconds, until cancelled."""
        await self.usage.flush_forever(self._counts, self._sightings)

    def status(self) -> dict[str, Any]:
        """Which credentials are on, as the management status says it."""
        counts = self.credentials.counts
        return {
            "shared": counts.shared,
            "named": counts.named,
            "oauth": counts.oauth,
            "dynamicRegistration": counts.oauth and self.settings.oauth_dynamic_registration,
        }

    def mcp_url(self, request: Request) -> str:
        """The /mcp URL clients reach: at gateway.public-url, else where this request came to."""
        origin = self.origins.of(request.scope)
        return f"{origin}{MCP_PATH}" if origin is not None else str(request.base_url) + MCP_PATH.lstrip("/")

    @property
    def clients(self) -> Clients:
        if self._clients is None:
            raise ServiceUnavailable("nats", NOT_OPEN)
        return self._clients

    @property
    def authority(self) -> Authority:
        """The OAuth authorization server's shared state, once the replica runs with OAuth on."""
        return self._oauth().authority

    @property
    def consent(self) -> Consent:
        return self._oauth().consent

    def _oauth(self) -> OAuth:
        if self.oauth is None:
            raise ServiceUnavailable("nats", NOT_OPEN)
        return self.oauth

    async def _grant(self, credential_id: str) -> gateway_pb2.CredentialRecord | None:
        """An OAuth grant read from its bucket (one made on another replica a moment ago)."""
        if self.oauth is None:
            return None
        stored = await self.oauth.records.grants.get(credential_id)
        return stored.value if stored is not None else None
