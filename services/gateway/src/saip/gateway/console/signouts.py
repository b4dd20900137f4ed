"""Signed-out console sessions in the `saip-sessions` bucket, which every replica follows: a sign-out holds on every
replica at once, and an entry lives only as long as the session could have."""

from __future__ import annotations

from datetime import timedelta

from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from saip.common import bus, jetstream, names
from saip.common.watch import WatchEnded
from saip.gateway.console.session import Sessions


async def bucket(js: JetStreamContext, lifetime_seconds: float, replicas: int) -> KeyValue:
    """The bucket, its entries kept a little longer than any session lives."""
    ttl = timedelta(seconds=lifetime_seconds + 60)
    return await jetstream.ensure_kv(js, names.SESSIONS_BUCKET, ttl=ttl, replicas=replicas)


class SignOuts:
    def __init__(self, kv: KeyValue, sessions: Sessions) -> None:
        self._kv = kv
        self._sessions = sessions

    async def sign_out(self, sid: str, until: float) -> None:
        """Refuse the session `sid` from now on, on every replica; on this one before the answer goes out."""
        self._sessions.revoke(sid, until)
        await self._kv.put(sid, f"{until:.0f}".encode())

    async def follow(self) -> None:
        """Every signed-out id the bucket holds, then each new one, into the sessions' refusals."""
        async for entry in bus.kv_updates(self._kv):
            if entry is not None and entry.value:
                self._sessions.revoke(entry.key, float(entry.value.decode()))
        raise WatchEnded("console sign-outs")
