"""The credentials this replica accepts, and the one check of a presented bearer token.

The shared token is `auth.TokenState`'s. Named tokens and OAuth grants are records in NATS (`store`), which every
replica follows with a watch (`apply`): a record's deletion is its revocation, and it holds here as soon as the watch
brings it. A grant made on another replica a moment ago may not have arrived yet: an access token naming a grant this
replica does not know is looked up once in the bucket before it is refused, and a grant seen deleted is refused
without a look.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from saip.common.tokens import token_hash
from saip.gateway.auth import TokenState
from saip.gateway.credentials.identity import SHARED_ID, Credential, Grant, Kind, grant_of
from saip.gateway.credentials.store import Gone, Records
from saip.gateway.oauth.tokens import AccessTokens
from saip.v1 import gateway_pb2

logger = logging.getLogger(__name__)

SHARED_NAME = "shared token"
MAX_GONE = 10_000  # revoked grants remembered, so their tokens are refused without a look in the bucket

Lookup = Callable[[str], Awaitable[gateway_pb2.CredentialRecord | None]]


def credential(record: gateway_pb2.CredentialRecord, principal: str = "") -> Credential:
    return Credential(record.id, Kind(record.kind), record.name, Grant(record.grant), principal)


@dataclass(frozen=True)
class Counts:
    """Which credentials are on, as the management status says it."""

    shared: bool
    named: int
    oauth: bool

    @property
    def any(self) -> bool:
        return self.shared or self.named > 0 or self.oauth


class CredentialRegistry:
    def __init__(self, shared: TokenState, access: AccessTokens | None, lookup: Lookup | None = None) -> None:
        """`access` None: OAuth is off, and no access token is accepted."""
        self.shared = shared
        self.access = access
        self._lookup = lookup
        self.records: dict[str, gateway_pb2.CredentialRecord] = {}
        self._named: dict[str, Credential] = {}  # by the token's SHA-256
        self._gone: OrderedDict[str, None] = OrderedDict()
        self._shared: Credential | None = None  # the shared token's, made once for the token in force

    @property
    def counts(self) -> Counts:
        return Counts(self.shared.is_set, len(self._named), self.access is not None)

    @property
    def required(self) -> bool:
        """Whether /mcp asks for a credential: the shared token, a named token or OAuth is on."""
        return self.shared.is_set or bool(self._named) or self.access is not None

    def apply(self, record: gateway_pb2.CredentialRecord) -> bool:
        """A record arrived (written here or on another replica); True when the named tokens changed here."""
        before = self.records.get(record.id)
        self.records[record.id] = record
        if record.kind == Kind.NAMED and record.token_sha256:
            self._named[record.token_sha256] = credential(record, record.token_sha256)
            return before is None or before.token_sha256 != record.token_sha256
        return False

    def remove(self, credential_id: str) -> bool:
        """A record was deleted: the credential is revoked. True when the named tokens changed here."""
        self._gone[credential_id] = None
        while len(self._gone) > MAX_GONE:
            self._gone.popitem(last=False)
        record = self.records.pop(credential_id, None)
        named = self._named.get(record.token_sha256) if record is not None and record.token_sha256 else None
        if record is not None and named is not None and named.id == credential_id:
            del self._named[record.token_sha256]
            return True
        return False

    async def verify(self, token: str, resource: Callable[[], str | None]) -> Credential | None:
        """The credential `token` stands for at /mcp, or None. `resource` says /mcp's URL for this request, asked only
        of an access token (None: no access token holds)."""
        hashed = token_hash(token)
        if self.shared.holds(hashed):
            if self._shared is None or self._shared.principal != hashed:
                self._shared = Credential(SHARED_ID, Kind.SHARED, SHARED_NAME, Grant.MANAGE, hashed)
            return self._shared
        named = self._named.get(hashed)
        if named is not None:
            return named
        if self.access is None or token.count(".") != 2:
            return None
        where = resource()
        claims = self.access.read(token, where) if where is not None else None
        if claims is None:
            return None
        record = await self.grant(claims.credential_id)
        if record is None or record.client_id != claims.client_id:
            return None
        return Credential(record.id, Kind.OAUTH, record.name, grant_of(claims.scopes), record.id)

    async def grant(self, credential_id: str) -> gateway_pb2.CredentialRecord | None:
        """An OAuth grant that stands: known here, or found in the bucket now (made on another replica a moment
        ago); None once it was revoked or its time is over."""
        if credential_id in self._gone:
            return None
        record = self.records.get(credential_id)
        if record is None and self._lookup is not None:
            record = await self._lookup(credential_id)
            if record is None:
                self.remove(credential_id)
                return None
            self.apply(record)
        if record is None or record.kind != Kind.OAUTH:
            return None
        return record

    async def follow(
        self, records: Records[gateway_pb2.CredentialRecord], kind: Kind, changed: Callable[[], Awaitable[object]]
    ) -> None:
        """Keep this replica's view of one bucket's credentials (those of `kind`) current, until cancelled. Named
        tokens turn the surface on and off: each change of them (this replica's own too, which it applied already)
        calls `changed` once the bucket's current ones are through. A watch started again (NATS came back) replays
        what there is: a credential of this bucket the replay does not hold was revoked meanwhile."""
        fresh: set[str] | None = set()
        for_surface = kind is Kind.NAMED
        async for change in records.watch():
            if change is None:
                if fresh is not None:
                    for key in [key for key, record in self.records.items() if record.kind == kind]:
                        if key not in fresh:
                            self.remove(key)
                    fresh = None
            elif isinstance(change, Gone):
                self.remove(change.name)
            else:
                if fresh is not None:
                    fresh.add(change[0])
                self.apply(change[1])
            if for_surface and fresh is None:
                await changed()

    def named_with(self, name: str) -> gateway_pb2.CredentialRecord | None:
        return next(
            (record for record in self.records.values() if record.kind == Kind.NAMED and record.name == name), None
        )
