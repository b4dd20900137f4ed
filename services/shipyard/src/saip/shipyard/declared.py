"""The shipped servers declared in configuration (shipyard.servers): every call that would change one is refused,
naming the key, and one is shipped again only when its declaration or a part's definition changed since its ship."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from saip.shipyard import bundles
from saip.shipyard.config import SERVERS_KEY, DeclaredServer
from saip.shipyard.errors import RuleRefused
from saip.shipyard.ports import Sources
from saip.v1 import shipyard_pb2

MANAGED = (
    "'{name}' is managed by configuration; change or remove it under " + SERVERS_KEY + " in saip.yaml and restart "
    "the shipyard service."
)


class Declarations:
    """The declared servers by name."""

    def __init__(self, declared: Sequence[DeclaredServer]) -> None:
        self._declared = {server.name.strip(): server for server in declared}

    def __iter__(self) -> Iterator[DeclaredServer]:
        return iter(self._declared.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip() in self._declared

    def refusal(self, name: str) -> str:
        """Why the server `name` may not be changed by a call (configuration declares it), or empty."""
        return MANAGED.format(name=name.strip()) if name in self else ""

    def writable(self, name: str) -> None:
        if refusal := self.refusal(name):
            raise RuleRefused(refusal)


def proposal(declared: DeclaredServer) -> shipyard_pb2.BundleProposal:
    """The ship a declaration asks for."""
    return shipyard_pb2.BundleProposal(
        name=declared.name, description=declared.description, transport=declared.transport, tools=declared.tools
    )


async def differs(sources: Sources, server: shipyard_pb2.ShippedServer, wanted: shipyard_pb2.BundleProposal) -> bool:
    """Whether the declaration or a part's definition changed since `server` was shipped."""
    if (server.description, server.transport) != (wanted.description, wanted.transport):
        return True
    if sorted(part.name for part in server.parts) != sorted(name.strip() for name in wanted.tools):
        return True
    return bool(await bundles.stale(sources, server))
