"""The risk of upstream servers and of their tools (the guide saip://guide/risk-levels), and where an address leads.

Server score = the sum of its axes (transport: a private-LAN host 1; auth: none, stdio or loopback 0, key or bearer
1, custom OAuth 2; trust: catalog vendor 0, catalog community 1, unknown 2; docs: no docs URL 1), bucketed <=0 L1,
1 L2, 2 L3, 3 L4, >=4 L5. Floors to L5: a non-loopback server without auth that can write or whose trust is unknown;
a privileged OAuth scope.

Tool score = readOnlyHint absent +1, destructiveHint +2, openWorldHint +1, idempotentHint -1, bucketed the same way.
Floors: an irreversible verb in the name L5; destructive without idempotent L5; no description and no annotations L4.

A composed tool's inherent level is the higher of its server's and its own; HITL lowers it one band (never below
L1), except when its description trips the poisoning scan, which is Tool Studio's scan (`saip.tools.risk.scan`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from saip.common.netguard import GuardBlocked, resolve
from saip.tools.errors import RuleRefused
from saip.tools.risk import scan
from saip.v1 import upstream_pb2

IRREVERSIBLE = re.compile(r"(^|_)(delete|drop|purge|wipe|remove)_|force_push", re.IGNORECASE)
PRIVILEGED_SCOPE = re.compile(r"^(admin\b.*|.*:admin|write_all|delete_.*)$", re.IGNORECASE)
AUTH_HEADERS = re.compile(r"^(authorization|x-api-key|api-key|x-auth-token|private-token)$", re.IGNORECASE)
METADATA_HOSTS = ("metadata.google.internal", "metadata.goog", "metadata")
METADATA_ADDRESSES = (ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"))


class Reach(StrEnum):
    """Where a server's transport leads."""

    STDIO = "stdio"
    LOOPBACK = "loopback"
    PRIVATE = "private"
    PUBLIC = "public"


@dataclass(frozen=True)
class Score:
    level: int
    reasons: tuple[str, ...]
    floor: bool = False

    @property
    def label(self) -> str:
        return f"L{self.level}"


def bucket(points: int) -> int:
    return max(1, min(5, points + 1))


async def reach(server: upstream_pb2.Server) -> Reach:
    """Where the server's address leads; cloud metadata and link-local targets are refused, naming the address."""
    if server.transport == upstream_pb2.TRANSPORT_STDIO:
        return Reach.STDIO
    parts = urlsplit(server.url)
    host = (parts.hostname or "").lower().rstrip(".")
    if host in METADATA_HOSTS:
        raise RuleRefused(f"'{host}' is a cloud metadata service, never an upstream MCP server; use the server's URL.")
    try:
        addresses = await resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
    except GuardBlocked:
        return Reach.PUBLIC  # it cannot be reached at all; the connection says so
    for address in addresses:
        mapped = getattr(address, "ipv4_mapped", None) or address
        if mapped in METADATA_ADDRESSES or mapped.is_link_local:
            raise RuleRefused(
                f"'{host}' resolves to {address}, a link-local address (cloud metadata lives there); an upstream "
                "server must be on a loopback, private or public address."
            )
    if all(address.is_loopback for address in addresses):
        return Reach.LOOPBACK
    if any(address.is_private or not address.is_global for address in addresses):
        return Reach.PRIVATE
    return Reach.PUBLIC


def authenticated(server: upstream_pb2.Server) -> bool:
    return bool(server.oauth_scopes) or any(AUTH_HEADERS.match(name) for name in server.headers)


def server_score(server: upstream_pb2.Server, where: Reach, *, writes: bool | None = None) -> Score:
    """`writes`: whether any of its listed tools can write (None while they are unknown: assumed)."""
    axes: list[tuple[int, str]] = []
    if where is Reach.PRIVATE:
        axes.append((1, "transport: a private-LAN host"))
    if server.oauth_scopes:
        axes.append((2, "auth: custom OAuth"))
    elif authenticated(server):
        axes.append((1, "auth: an API key or bearer token"))
    match server.trust:
        case upstream_pb2.TRUST_VENDOR:
            pass
        case upstream_pb2.TRUST_COMMUNITY:
            axes.append((1, "trust: a community catalog server"))
        case _:
            axes.append((2, "trust: unknown (a custom server)"))
    if not server.docs_url:
        axes.append((1, "docs: no docs URL"))
    level = bucket(sum(points for points, _ in axes))
    reasons = [reason for _, reason in axes] or ["vendor server, no auth needed, documented, local or public"]
    floors = []
    remote = where in (Reach.PRIVATE, Reach.PUBLIC)
    if remote and not authenticated(server) and (writes is not False or server.trust == upstream_pb2.TRUST_UNSPECIFIED):
        floors.append("floor: a non-loopback server without auth that can write or whose trust is unknown")
    privileged = [scope for scope in server.oauth_scopes if PRIVILEGED_SCOPE.match(scope)]
    if privileged:
        floors.append(f"floor: privileged OAuth scope {', '.join(privileged)}")
    if floors:
        return Score(5, (*floors, *reasons), floor=True)
    return Score(level, tuple(reasons))


def tool_score(tool: upstream_pb2.UpstreamTool) -> Score:
    axes: list[tuple[int, str]] = []
    if not tool.read_only:
        axes.append((1, "readOnlyHint absent"))
    if tool.destructive:
        axes.append((2, "destructiveHint"))
    if tool.open_world:
        axes.append((1, "openWorldHint"))
    if tool.idempotent:
        axes.append((-1, "idempotentHint"))
    level = bucket(sum(points for points, _ in axes))
    reasons = [reason for _, reason in axes] or ["read-only, closed-world"]
    if IRREVERSIBLE.search(tool.name):
        return Score(5, (f"floor: an irreversible verb in the name '{tool.name}'", *reasons), floor=True)
    if tool.destructive and not tool.idempotent:
        return Score(5, ("floor: destructive without idempotent", *reasons), floor=True)
    if not tool.description.strip() and not tool.has_annotations:
        return Score(max(level, 4), ("floor: no description and no annotations", *reasons), floor=True)
    return Score(level, tuple(reasons))


def inherent(server: Score, tool: Score) -> Score:
    """A composed tool's level: the higher of its server's and its own, with the reasons of both."""
    reasons = (*(f"tool {reason}" for reason in tool.reasons), *(f"server {reason}" for reason in server.reasons))
    return Score(max(server.level, tool.level), reasons, floor=server.floor or tool.floor)


def effective(level: int, *, hitl: bool, poisoned: bool) -> int:
    """HITL lowers a level one band, never below L1, never for a tool that tripped the poisoning scan."""
    return max(1, level - 1) if hitl and not poisoned and level > 1 else level


def poisoning(tool: upstream_pb2.UpstreamTool, other_tools: Iterable[str]) -> list[str]:
    """Tool Studio's poisoning scan over what the model reads of an upstream tool: its title, its description and
    its schema (property descriptions live there)."""
    text = "\n".join([tool.title, tool.description, tool.input_schema_json])
    return scan(text, other_tools=[name for name in other_tools if name != tool.name])
