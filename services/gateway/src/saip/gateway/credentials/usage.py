"""How much each credential is used: first and last seen, and the calls and questions of the last hour.

Each replica counts what it serves in memory (`seen` on every authenticated /mcp request, `called` as each tool
call ends) and writes its counts to the saip-usage bucket every few seconds, one key per credential and replica, off
the path of any call. A credential's first sighting is also kept for good (saip-clients, created once). The person's
list adds up every replica's counts (`summed`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from hashlib import sha256

import anyio

from saip.gateway.credentials.identity import Credential, Kind
from saip.gateway.credentials.store import Records
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

HOUR_MINUTES = 60
FLUSH_SECONDS = 5.0


def minute_of(moment: float) -> int:
    return math.floor(moment / 60)


@dataclass
class _Tally:
    first_seen: float
    last_seen: float
    minutes: dict[int, list[int]] = field(default_factory=dict)  # minute -> [calls, questions]

    def message(self, now: float) -> gateway_pb2.CredentialUsage:
        oldest = minute_of(now) - HOUR_MINUTES
        self.minutes = {minute: counts for minute, counts in self.minutes.items() if minute > oldest}
        return gateway_pb2.CredentialUsage(
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            minutes=[
                gateway_pb2.UsageMinute(minute=minute, calls=calls, questions=questions)
                for minute, (calls, questions) in sorted(self.minutes.items())
            ],
        )


class Usage:
    """This replica's counts, by credential id; calls without a credential (no auth on /mcp) are not counted."""

    def __init__(self, replica: str, *, clock: Callable[[], float] = time.time) -> None:
        # A replica's name may hold any character; a key holds few: the name's digest stands for it.
        self._replica = sha256(replica.encode()).hexdigest()[:16]
        self._clock = clock
        self._tallies: dict[str, _Tally] = {}
        self._dirty: set[str] = set()
        self._new: set[str] = set()

    def seen(self, credential: Credential | None) -> None:
        if credential is None or credential.kind is Kind.NONE:
            return
        now = self._clock()
        tally = self._tallies.get(credential.id)
        if tally is None:
            self._tallies[credential.id] = _Tally(now, now)
            self._new.add(credential.id)
        else:
            tally.last_seen = now
        self._dirty.add(credential.id)

    def called(self, credential: Credential | None, asked: bool) -> None:
        """A tool call ended; `asked`: it put a question to the person."""
        if credential is None or credential.kind is Kind.NONE:
            return
        self.seen(credential)
        counts = self._tallies[credential.id].minutes.setdefault(minute_of(self._clock()), [0, 0])
        counts[0] += 1
        counts[1] += int(asked)

    def forget(self, credential_id: str) -> None:
        """A revoked credential: nothing more of it is written."""
        self._tallies.pop(credential_id, None)
        self._dirty.discard(credential_id)
        self._new.discard(credential_id)

    async def flush(
        self, counts: Records[gateway_pb2.CredentialUsage], sightings: Records[gateway_pb2.CredentialSeen]
    ) -> None:
        """Write what changed since the last flush; what NATS did not take is written with the next one."""
        now = self._clock()
        for credential_id in sorted(self._new):
            tally = self._tallies.get(credential_id)
            if tally is not None:
                await sightings.create(credential_id, gateway_pb2.CredentialSeen(first_seen=tally.first_seen))
            self._new.discard(credential_id)
        for credential_id in sorted(self._dirty):
            tally = self._tallies.get(credential_id)
            if tally is not None:
                await counts.put(f"{credential_id}.{self._replica}", tally.message(now))
            self._dirty.discard(credential_id)

    async def flush_forever(
        self, counts: Records[gateway_pb2.CredentialUsage], sightings: Records[gateway_pb2.CredentialSeen]
    ) -> None:
        while True:
            await anyio.sleep(FLUSH_SECONDS)
            try:
                await self.flush(counts, sightings)
            except Exception as exc:  # NATS away: the counts stay dirty and go with the next flush
                logger.debug("credential usage not written; trying again", extra={"error": repr(exc)})


@dataclass(frozen=True)
class Summary:
    """One credential's use on every replica."""

    first_seen: float | None = None
    last_seen: float | None = None
    calls: int = 0
    questions: int = 0


def summed(
    counts: Iterable[tuple[str, gateway_pb2.CredentialUsage]], sightings: dict[str, float], now: float
) -> dict[str, Summary]:
    """Each credential's use, from every replica's counts (`<credential>.<replica>`) and the first sightings."""
    oldest = minute_of(now) - HOUR_MINUTES
    found: dict[str, Summary] = {credential_id: Summary(first_seen=first) for credential_id, first in sightings.items()}
    for name, usage in counts:
        credential_id = name.rpartition(".")[0]
        was = found.get(credential_id, Summary())
        recent = [minute for minute in usage.minutes if minute.minute > oldest]
        firsts = [moment for moment in (was.first_seen, usage.first_seen) if moment]
        found[credential_id] = Summary(
            first_seen=min(firsts) if firsts else None,
            last_seen=max(was.last_seen or 0.0, usage.last_seen) or None,
            calls=was.calls + sum(minute.calls for minute in recent),
            questions=was.questions + sum(minute.questions for minute in recent),
        )
    return found
