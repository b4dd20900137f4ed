"""The authorization server's records in NATS, shared by every replica (gateway.proto): dynamically registered
clients in saip-clients, OAuth grants and refresh tokens in saip-grants, pending authorizations and codes in
saip-authorizations. Codes and refresh tokens are keyed by their SHA-256 only."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js.kv import KeyValue

from saip.gateway.credentials import store
from saip.gateway.credentials.store import Records
from saip.v1 import gateway_pb2


@dataclass(frozen=True)
class OAuthRecords:
    registrations: Records[gateway_pb2.OAuthRegistration]
    grants: Records[gateway_pb2.CredentialRecord]
    refresh: Records[gateway_pb2.RefreshRecord]
    requests: Records[gateway_pb2.PendingAuthorization]
    codes: Records[gateway_pb2.AuthorizationCodeRecord]

    @classmethod
    def over(cls, clients: KeyValue, grants: KeyValue, authorizations: KeyValue) -> OAuthRecords:
        return cls(
            registrations=Records(clients, "client.", gateway_pb2.OAuthRegistration.FromString),
            grants=store.credentials(grants),
            refresh=Records(grants, "refresh.", gateway_pb2.RefreshRecord.FromString),
            requests=Records(authorizations, "request.", gateway_pb2.PendingAuthorization.FromString),
            codes=Records(authorizations, "code.", gateway_pb2.AuthorizationCodeRecord.FromString),
        )
