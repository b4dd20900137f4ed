"""Where an upstream's definition points, checked before anything connects to it: saip's own /mcp is refused by its
URL, and cloud metadata and link-local targets by where their address leads (`risk.reach`).

saip's own /mcp is wherever its gateway listens, which `tools.upstream-gateway-urls` lists (`saip run` adds where its
gateway listens, compose and k8s name the gateway's services). A server's URL is one of them when it names the same
port and path (`/mcp`, `/mcp/`, `/MCP`, `/%6Dcp` alike; userinfo, query and fragment aside) on the same place:

- the same host name (case and a trailing dot aside), or a name and an address that resolve to a common address
  (`gateway` and the address of its container, `127.1` and `127.0.0.1`);
- for a gateway on this machine (a listed host that is a loopback or an unspecified address): any host that reaches
  this machine by a loopback address (127.0.0.0/8, ::1, `localhost`) or an unspecified one (`0.0.0.0`, `[::]`, which
  connect to this machine);
- for a gateway listening on every address (a listed host that is unspecified): any address of this machine's own
  interfaces as well.

What no URL can show (another route to the gateway, a proxy in front of it) its handshake does: `client.connect`
refuses a server that announces itself as saip's gateway, and `Servers.add` makes that handshake before anything is
stored.
"""

from __future__ import annotations

import ipaddress
import posixpath
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from saip.common.netguard import GuardBlocked, IpAddress, resolve
from saip.tools.errors import OwnMcp, RuleRefused
from saip.tools.upstream import registry, risk
from saip.v1 import upstream_pb2

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Place:
    """Where a URL leads, as far as telling saip's own /mcp apart: its host, port and path, normalized."""

    host: str
    port: int
    path: str


def place(url: str) -> Place | None:
    """The place a URL names; None when it names none (no host, a port that is no number)."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".")
    if not host or port is None:
        return None
    # The path as the gateway routes it: percent-decoded, dot segments and repeated slashes gone, case aside.
    path = posixpath.normpath("/" + unquote(parts.path)).lstrip("/").rstrip("/").lower()
    return Place(host, port, path)


def _here(address: IpAddress) -> bool:
    """Whether connecting to the address reaches this machine whatever its interfaces: loopback or unspecified."""
    mapped = getattr(address, "ipv4_mapped", None) or address
    return mapped.is_loopback or mapped.is_unspecified


def _unspecified(address: IpAddress) -> bool:
    mapped = getattr(address, "ipv4_mapped", None) or address
    return mapped.is_unspecified


def _own_interface(address: IpAddress) -> bool:
    """Whether the address is one of this machine's own (a socket can be bound to it; nothing is sent)."""
    family = socket.AF_INET6 if isinstance(address, ipaddress.IPv6Address) else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


async def _addresses(place: Place) -> set[IpAddress]:
    """What the host resolves to; nothing when it does not (then only its name can match)."""
    try:
        return set(await resolve(place.host, place.port))
    except GuardBlocked:
        return set()


def _same_place(reached: set[IpAddress], listed: set[IpAddress]) -> bool:
    if reached & listed:
        return True
    if any(_here(address) for address in listed) and any(_here(address) for address in reached):
        return True
    return any(_unspecified(address) for address in listed) and any(_own_interface(a) for a in reached)


async def is_gateway(url: str, gateway_urls: Sequence[str]) -> bool:
    """Whether `url` is one of saip's own /mcp URLs, at any address of its place (the module's rules)."""
    candidate = place(url)
    if candidate is None:
        return False
    listed = [
        own for own in map(place, gateway_urls) if own and (own.port, own.path) == (candidate.port, candidate.path)
    ]
    if not listed:
        return False
    if any(own.host == candidate.host for own in listed):
        return True
    reached = await _addresses(candidate)
    for own in listed:
        if reached and _same_place(reached, await _addresses(own)):
            return True
    return False


async def check(
    server: upstream_pb2.Server, gateway_urls: Sequence[str], variables: Mapping[str, str] | None = None
) -> risk.Reach:
    """Refuse saip's own /mcp by URL, and metadata and link-local targets; say where the server is."""
    if server.transport != upstream_pb2.TRANSPORT_STDIO:
        try:
            url = registry.resolve(server.url, variables)
        except RuleRefused:  # a variable not set: the URL as written (the connection refuses it, naming it)
            url = server.url
        if await is_gateway(url, gateway_urls):
            raise OwnMcp(server.id)
    return await risk.reach(server)
