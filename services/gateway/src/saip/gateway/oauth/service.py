"""The authorization server as one gateway replica runs it: its buckets opened, its shared state (`Authority`) and
the consent behind the console's screen."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from saip.common import jetstream, names
from saip.common.netguard import NetPolicy
from saip.gateway.config import GatewaySettings
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.oauth.authority import CODE_SECONDS, SCOPES, Authority, configured_clients
from saip.gateway.oauth.cimd import FETCH_SECONDS, MAX_BYTES, MetadataDocuments
from saip.gateway.oauth.consent import Consent
from saip.gateway.oauth.store import OAuthRecords
from saip.gateway.oauth.tokens import AccessTokens

DAY = 86_400.0


@dataclass(frozen=True)
class OAuth:
    records: OAuthRecords
    authority: Authority
    consent: Consent

    @classmethod
    async def opened(
        cls,
        js: JetStreamContext,
        clients: KeyValue,
        registry: CredentialRegistry,
        access: AccessTokens,
        settings: GatewaySettings,
    ) -> OAuth:
        """Open the grants and authorizations buckets (their entries age out: a grant with its last refresh token, a
        pending authorization and a code within minutes) and build what answers for /mcp's authorization server."""
        replicas = settings.nats_replicas
        refresh_seconds = settings.oauth_refresh_token_days * DAY
        grants = await jetstream.ensure_kv(
            js, names.GRANTS_BUCKET, ttl=timedelta(seconds=refresh_seconds), replicas=replicas
        )
        pending = max(settings.oauth_consent_seconds, CODE_SECONDS)
        authorizations = await jetstream.ensure_kv(
            js, names.AUTHORIZATIONS_BUCKET, ttl=timedelta(seconds=2 * pending), replicas=replicas
        )
        records = OAuthRecords.over(clients, grants, authorizations)
        policy = NetPolicy(
            mode=settings.oauth_metadata_network_mode,
            hosts_allow=tuple(settings.oauth_metadata_hosts_allow),
            max_redirects=0,
            max_body=MAX_BYTES,
            timeout=FETCH_SECONDS,
            ca_file=str(settings.oauth_metadata_ca_file) if settings.oauth_metadata_ca_file else None,
        )
        authority = Authority(
            records=records,
            registry=registry,
            access=access,
            documents=MetadataDocuments(policy, " ".join(SCOPES)),
            configured=configured_clients(settings.oauth_clients),
            refresh_seconds=refresh_seconds,
            consent_seconds=settings.oauth_consent_seconds,
            dynamic_registration=settings.oauth_dynamic_registration,
        )
        return cls(records, authority, Consent(authority))
