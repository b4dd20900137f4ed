"""The console's sign-in: a session cookie any gateway replica accepts, its CSRF proof, idle expiry and sign-out.

The person signs in once with the admin token; the browser then holds only a sealed cookie (AES-GCM under a key
derived from `approval.sealing-key`, which every replica shares), never the token. A session ends when it has been
idle for `console.idle-minutes`, when it is older than `console.session-hours`, when the admin token changes (the
cookie carries the token's fingerprint), or at sign-out: the signed-out session's id is written to the `saip-sessions`
bucket, which every replica follows, so it is refused everywhere at once.

Every change a session makes carries the CSRF proof (`X-Saip-Csrf`), an HMAC of the session's id that the console
reads from `GET /api/v1/session` and keeps in memory: a page of another origin can neither read it nor send the
header without the browser asking first, and the cookie is SameSite=Strict besides.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from saip.common.tokens import token_hash

COOKIE = "saip_session"
CSRF_HEADER = "x-saip-csrf"
_AAD = b"saip console session v1"
_NONCE = 12
# A session seen again after this long gets a fresh cookie (its idle clock restarts); more often would only rewrite
# the same cookie on every request.
REFRESH_AFTER = 60.0
# How many signed-out ids are kept before those whose session has ended anyway are let go.
PRUNE_AT = 1024


@dataclass(frozen=True)
class Session:
    """What the cookie holds: its id, when it was issued and last seen, and the admin token it was opened with."""

    sid: str
    issued: float
    seen: float
    admin: str  # the admin token's fingerprint: a new admin token ends every session

    def expires(self, idle: float, lifetime: float) -> float:
        """When this session ends if nothing is done with it (the earlier of the idle and the absolute limit)."""
        return min(self.seen + idle, self.issued + lifetime)


class Sessions:
    """Opens and checks console sessions; the same on every replica that has the same sealing key and admin token."""

    def __init__(
        self,
        *,
        sealing_key: str,
        admin_token: str,
        idle_seconds: float,
        lifetime_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"saip console session key").derive(
            sealing_key.encode()
        )
        self._aead = AESGCM(key)
        self._csrf_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"saip console csrf").derive(
            sealing_key.encode()
        )
        self._admin = token_hash(admin_token)
        self.idle = idle_seconds
        self.lifetime = lifetime_seconds
        self._clock = clock
        # Signed-out session ids and when each session would have ended, kept by the saip-sessions watch.
        self._revoked: dict[str, float] = {}

    def admin_matches(self, presented: str) -> bool:
        """Whether `presented` is the admin token (constant time)."""
        return hmac.compare_digest(token_hash(presented), self._admin)

    def open(self) -> Session:
        now = self._clock()
        return Session(sid=secrets.token_urlsafe(18), issued=now, seen=now, admin=self._admin)

    def seal(self, session: Session) -> str:
        nonce = secrets.token_bytes(_NONCE)
        body = json.dumps([session.sid, session.issued, session.seen, session.admin], separators=(",", ":"))
        sealed = self._aead.encrypt(nonce, body.encode(), _AAD)
        return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def unseal(self, cookie: str | None) -> Session | None:
        """The live session a cookie holds; None for no cookie, a forged or damaged one, or a session that ended."""
        if not cookie or len(cookie) > 512:
            return None
        try:
            raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
            body = self._aead.decrypt(raw[:_NONCE], raw[_NONCE:], _AAD)
            sid, issued, seen, admin = json.loads(body)
            session = Session(str(sid), float(issued), float(seen), str(admin))
        except (binascii.Error, InvalidTag, ValueError, TypeError):
            return None
        if not self.live(session):
            return None
        return session

    def live(self, session: Session) -> bool:
        now = self._clock()
        return (
            hmac.compare_digest(session.admin, self._admin)
            and session.sid not in self._revoked
            and now < session.expires(self.idle, self.lifetime)
        )

    def revoke(self, sid: str, until: float) -> None:
        """Refuse session `sid` from now on; ids of sessions that have ended by themselves are let go meanwhile."""
        now = self._clock()
        if len(self._revoked) >= PRUNE_AT:
            self._revoked = {kept: end for kept, end in self._revoked.items() if end > now}
        self._revoked[sid] = until

    def touched(self, session: Session) -> Session | None:
        """The session seen now, when its cookie is worth writing again; None when the one it has will do."""
        now = self._clock()
        return replace(session, seen=now) if now - session.seen >= REFRESH_AFTER else None

    def csrf(self, session: Session) -> str:
        """The CSRF proof of a session: the console sends it back with every change."""
        return hmac.new(self._csrf_key, session.sid.encode(), hashlib.sha256).hexdigest()

    def csrf_matches(self, session: Session, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.csrf(session))

    def seconds_left(self, session: Session) -> float:
        return max(0.0, session.expires(self.idle, self.lifetime) - self._clock())
