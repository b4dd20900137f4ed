"""A credential as a call carries it: its id, kind, name and grant, and where the /mcp guard leaves it for the MCP
layer (the request's ASGI scope)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from saip.v1 import common_pb2

# The key of the ASGI scope the guard puts the request's credential under.
SCOPE_KEY = "saip.credential"
SHARED_ID = "shared"


class Kind(StrEnum):
    SHARED = "shared"  # the seed's mcp-server.auth-token (or the one the person rotated)
    NAMED = "named"  # a static token the person made for one client (saip clients add)
    OAUTH = "oauth"  # an OAuth grant: the person's consent to one client
    NONE = "none"  # no credential: /mcp asks for none (no token, no named token, no OAuth), published tools only


class Grant(StrEnum):
    """What a credential may reach; also the OAuth scopes a client asks for."""

    TOOLS = "tools"  # the published tools only
    MANAGE = "manage"  # the management surface (saip_* tools, resources, prompts) as well


GRANT_SCOPES: Mapping[Grant, tuple[str, ...]] = {
    Grant.TOOLS: (Grant.TOOLS.value,),
    Grant.MANAGE: (Grant.TOOLS.value, Grant.MANAGE.value),
}


def grant_of(scopes: list[str] | tuple[str, ...]) -> Grant:
    """The grant a token's scopes carry."""
    return Grant.MANAGE if Grant.MANAGE.value in scopes else Grant.TOOLS


@dataclass(frozen=True)
class Credential:
    """Who a call is: the credential it presented. `principal` is what a 2026-07-28 approval is bound to: the token
    itself (its hash) for a static token, so a rotated one cannot answer; the grant for OAuth, whose access tokens
    are renewed under it."""

    id: str
    kind: Kind
    name: str
    grant: Grant
    principal: str = ""

    @property
    def manages(self) -> bool:
        return self.grant is Grant.MANAGE

    @property
    def label(self) -> str:
        """The credential in words, as the trail names it first: `'ci-bot' (named token)`."""
        return f"'{self.name}' ({KIND_WORDS[self.kind]})"

    @property
    def proto(self) -> common_pb2.Credential | None:
        """The credential on the trail; none when the call presented none."""
        if self.kind is Kind.NONE:
            return None
        return common_pb2.Credential(id=self.id, kind=self.kind.value, name=self.name)


KIND_WORDS: Mapping[Kind, str] = {
    Kind.SHARED: "shared token",
    Kind.NAMED: "named token",
    Kind.OAUTH: "OAuth",
    Kind.NONE: "no credential",
}
# A request to /mcp while it asks for no credential: the published tools, never the management surface.
ANONYMOUS = Credential("", Kind.NONE, "", Grant.TOOLS)


def credential_of(scope: Mapping[str, Any] | None) -> Credential | None:
    """The credential the guard found for this request; None for a request it did not see (in-process, stdio)."""
    if scope is None:
        return None
    found = scope.get(SCOPE_KEY)
    return found if isinstance(found, Credential) else None
