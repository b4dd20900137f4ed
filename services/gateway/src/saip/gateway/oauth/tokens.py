"""The tokens saip issues as /mcp's authorization server.

An access token is a JWT (RFC 9068 shape: `typ` at+jwt; `iss`, `aud` the /mcp resource, `sub` the grant's
credential id, `client_id`, `scope`, `iat`, `exp`, `jti`), signed with HMAC-SHA256 under a key derived from
approval.sealing-key, which every replica shares: any replica checks any token without a lookup, and a token names
the one resource it is for (RFC 8707). Whether its grant still stands is the credential registry's to say (a deleted
grant's tokens are refused everywhere). Refresh tokens and authorization codes are random, kept only as their
SHA-256 (`secret` and `saip.common.tokens.token_hash`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import jwt

ALGORITHM = "HS256"
TOKEN_TYPE = "at+jwt"
# What the signing key is derived for: the sealing key also seals 2026-07-28 approval state, under other words.
PURPOSE = b"saip oauth access token v1"
REQUIRED = ["iss", "aud", "sub", "exp", "iat", "client_id"]
KEPT = 10_000  # tokens read and kept, so the next request with one is not read again


def secret() -> str:
    """A refresh token or an authorization code: 256 random bits (RFC 6749 asks at least 128 of a code)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class AccessClaims:
    """What an access token says, once its signature, audience and expiry held."""

    credential_id: str
    client_id: str
    scopes: tuple[str, ...]
    resource: str
    expires_at: int


class AccessTokens:
    def __init__(self, sealing_key: str, lifetime: int, *, clock: Callable[[], float] = time.time) -> None:
        self._key = hmac.new(sealing_key.encode(), PURPOSE, hashlib.sha256).digest()
        self.lifetime = lifetime
        self._clock = clock
        self._read: dict[str, AccessClaims] = {}

    def issue(self, *, issuer: str, resource: str, credential_id: str, client_id: str, scopes: list[str]) -> str:
        now = int(self._clock())
        claims = {
            "iss": issuer,
            "aud": resource,
            "sub": credential_id,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + self.lifetime,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"typ": TOKEN_TYPE})

    def read(self, token: str, resource: str | None) -> AccessClaims | None:
        """The claims of a token saip signed that has not expired and names `resource` (any resource when None: a
        revocation request names the token, not where it was used); None for anything else.

        A client presents one token on every request for its hour, and reading a JWT costs many times what the rest
        of the guard does (docs/BENCHMARKS.md, "The /mcp guard"), so a token read once is kept (at most `KEPT`,
        forgotten all at once past that). What a kept token names, and its expiry, are still checked on each request;
        whether its grant stands is the registry's to say."""
        kept = self._read.get(token)
        if kept is not None:
            fits = resource is None or kept.resource == resource
            return kept if fits and kept.expires_at > self._clock() else None
        claims = self._decoded(token, resource)
        if claims is not None:
            if len(self._read) >= KEPT:
                self._read.clear()
            self._read[token] = claims
        return claims

    def _decoded(self, token: str, resource: str | None) -> AccessClaims | None:
        if token.count(".") != 2:  # not a JWT: a static token, or nothing
            return None
        try:
            header = jwt.get_unverified_header(token)
            if header.get("typ") != TOKEN_TYPE:
                return None
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[ALGORITHM],
                audience=resource,
                # The expiry is read against this issuer's own clock, below (PyJWT would read the system's).
                options={"require": REQUIRED, "verify_aud": resource is not None, "verify_exp": False},
            )
        except jwt.InvalidTokenError:
            return None
        if not isinstance(claims["exp"], int) or claims["exp"] <= self._clock():
            return None
        return AccessClaims(
            credential_id=str(claims["sub"]),
            client_id=str(claims["client_id"]),
            scopes=tuple(str(claims.get("scope", "")).split()),
            resource=str(claims["aud"]),
            expires_at=int(claims["exp"]),
        )
