"""Client ID Metadata Documents: a client whose id is an https URL describes itself in the JSON document at it.

The document is fetched through the network guard (`saip.common.netguard`: strict by default, so a client id cannot
point saip at a private address; oauth.metadata-network-mode and oauth.metadata-hosts-allow say otherwise, and
oauth.metadata-ca-file adds a private certificate authority), and must be JSON naming exactly that URL as its
`client_id`, with a `client_name` and redirect URIs saip accepts (`redirects`); it is a public client (no secret).
It is kept for the time its Cache-Control allows (bounded), so a flow's several requests fetch it once.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from saip.common.netguard import GuardBlocked, NetPolicy, guarded_fetch
from saip.gateway.oauth import redirects

logger = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024
FETCH_SECONDS = 5.0
DEFAULT_SECONDS = 300.0
MIN_SECONDS, MAX_SECONDS = 30.0, 86_400.0
MAX_KEPT = 1000
MAX_AGE = re.compile(r"max-age=(\d+)")
SECRET_METHODS = frozenset({"client_secret_post", "client_secret_basic", "client_secret_jwt"})


def is_document_url(client_id: str) -> bool:
    """A client id that is a metadata document's URL: https, with a path (the draft's rule)."""
    parts = urlsplit(client_id)
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/") and not parts.fragment


class DocumentRefused(Exception):
    """The document could not be fetched or is not one saip accepts; the message says why."""


@dataclass(frozen=True)
class _Kept:
    client: OAuthClientInformationFull
    until: float


class MetadataDocuments:
    def __init__(self, policy: NetPolicy, default_scope: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._scope = default_scope
        self._clock = clock
        self._kept: dict[str, _Kept] = {}

    async def client(self, url: str) -> OAuthClientInformationFull:
        """The client the document at `url` describes (kept, or fetched now); DocumentRefused says why not."""
        kept = self._kept.get(url)
        if kept is not None and kept.until > self._clock():
            return kept.client
        try:
            answer = await guarded_fetch(url, policy=self._policy, headers={"Accept": "application/json"})
        except GuardBlocked as exc:
            raise DocumentRefused(f"the client's metadata document could not be fetched: {exc}") from None
        if answer.status != 200:
            raise DocumentRefused(f"the client's metadata document answered HTTP {answer.status}")
        client = self.parsed(url, answer.body)
        if len(self._kept) >= MAX_KEPT:
            self._kept.clear()
        self._kept[url] = _Kept(client, self._clock() + _seconds(answer.headers.get("cache-control", "")))
        return client

    def parsed(self, url: str, body: bytes) -> OAuthClientInformationFull:
        try:
            document = json.loads(body)
        except ValueError:
            raise DocumentRefused("the client's metadata document is not JSON") from None
        if not isinstance(document, dict):
            raise DocumentRefused("the client's metadata document is not a JSON object")
        if document.get("client_id") != url:
            raise DocumentRefused("the client's metadata document names another client_id than its own URL")
        if not isinstance(document.get("client_name"), str) or not document["client_name"].strip():
            raise DocumentRefused("the client's metadata document has no client_name")
        uris = document.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(uri, str) for uri in uris):
            raise DocumentRefused("the client's metadata document lists no redirect_uris")
        problem = redirects.problems(uris)
        if problem is not None:
            raise DocumentRefused(f"the client's metadata document has a redirect URI saip refuses: {problem}")
        method = document.get("token_endpoint_auth_method", "none")
        if method in SECRET_METHODS or "client_secret" in document:
            raise DocumentRefused("a client with a metadata document has no secret (token_endpoint_auth_method none)")
        if method != "none":
            raise DocumentRefused(f"token_endpoint_auth_method '{method}' is not supported; use none (PKCE)")
        try:
            return OAuthClientInformationFull.model_validate(
                {
                    "client_id": url,
                    "client_name": document["client_name"].strip()[:200],
                    "redirect_uris": uris,
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "scope": document.get("scope") if isinstance(document.get("scope"), str) else self._scope,
                    "client_uri": document.get("client_uri"),
                }
            )
        except ValidationError as exc:
            raise DocumentRefused(
                f"the client's metadata document is malformed ({exc.error_count()} problems)"
            ) from None


def _seconds(cache_control: str) -> float:
    """How long a document is kept: its max-age, within bounds; the default when it says none (no-store: the
    least)."""
    if "no-store" in cache_control or "no-cache" in cache_control:
        return MIN_SECONDS
    match = MAX_AGE.search(cache_control)
    seconds = float(match.group(1)) if match else DEFAULT_SECONDS
    return min(MAX_SECONDS, max(MIN_SECONDS, seconds))
