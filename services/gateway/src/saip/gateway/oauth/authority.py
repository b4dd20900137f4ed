"""saip as the authorization server of its own /mcp: what every replica shares to answer for it (the records in
NATS, the signing of access tokens, the clients configured and the metadata documents kept), and which client a
client id names.

A client is one of three: registered in saip.yaml (oauth.clients), a Client ID Metadata Document (its id is the
document's https URL), or registered dynamically (RFC 7591, its record in saip-clients). Each is a public client
unless its registration holds a secret (a dynamically registered one that asked for one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from saip.gateway.config import PreRegistered
from saip.gateway.credentials.identity import Grant
from saip.gateway.credentials.registry import CredentialRegistry
from saip.gateway.oauth.cimd import DocumentRefused, MetadataDocuments, is_document_url
from saip.gateway.oauth.store import OAuthRecords
from saip.gateway.oauth.tokens import AccessTokens

logger = logging.getLogger(__name__)

CONFIGURED = "configured"
REGISTERED = "registered dynamically"
# Every scope a client may ask for; the person's consent decides which it gets.
SCOPES = (Grant.TOOLS.value, Grant.MANAGE.value)
CODE_SECONDS = 60.0


@dataclass(frozen=True)
class KnownClient:
    """A client, and where it came from as the consent screen says it: its metadata document's host,
    "registered dynamically" or "configured"."""

    info: OAuthClientInformationFull
    host: str

    @property
    def name(self) -> str:
        return self.info.client_name or self.info.client_id


def configured_clients(entries: Sequence[PreRegistered]) -> dict[str, OAuthClientInformationFull]:
    return {
        entry.id: OAuthClientInformationFull(
            client_id=entry.id,
            client_name=entry.name,
            redirect_uris=entry.redirect_uris,  # type: ignore[arg-type]  # pydantic parses each as a URL
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(SCOPES),
        )
        for entry in entries
    }


@dataclass
class Authority:
    records: OAuthRecords
    registry: CredentialRegistry
    access: AccessTokens
    documents: MetadataDocuments
    configured: Mapping[str, OAuthClientInformationFull]
    refresh_seconds: float
    consent_seconds: float
    dynamic_registration: bool
    clock: Callable[[], float] = time.time

    async def client(self, client_id: str) -> KnownClient | None:
        """The client `client_id` names, or None (unknown, or a metadata document saip refuses: logged)."""
        if client_id in self.configured:
            return KnownClient(self.configured[client_id], CONFIGURED)
        if is_document_url(client_id):
            try:
                info = await self.documents.client(client_id)
            except DocumentRefused as exc:
                logger.warning("client metadata document refused", extra={"client": client_id, "reason": str(exc)})
                return None
            return KnownClient(info, urlsplit(client_id).hostname or client_id)
        stored = await self.records.registrations.get(client_id) if _plain_id(client_id) else None
        if stored is None:
            return None
        try:
            info = OAuthClientInformationFull.model_validate_json(stored.value.metadata_json)
        except ValidationError:
            logger.error("unreadable client registration skipped", extra={"client": client_id})
            return None
        return KnownClient(info, REGISTERED)


def _plain_id(client_id: str) -> bool:
    """An id that can be a key of the bucket (what DCR issues: a UUID); anything else names no registration."""
    return 0 < len(client_id) <= 200 and all(char.isalnum() or char in "-_" for char in client_id)
