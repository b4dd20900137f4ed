"""Where a request reached the gateway: the base URL that is the OAuth issuer, and /mcp's resource under it.

gateway.public-url fixes it (behind a proxy, or a tunnel that ends TLS); unset, it is the request's own scheme and
Host, once the Host is one of gateway.allowed-hosts (the DNS-rebinding protection /mcp itself applies), so a page
in a browser cannot make saip name an address of its choosing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MCP_PATH = "/mcp"


def host_allowed(host: str, patterns: Sequence[str]) -> bool:
    """`host` (host:port as the Host header gives it) is one of `patterns`, each a host:port or host:* (any port)."""
    for pattern in patterns:
        if host == pattern:
            return True
        if pattern.endswith(":*") and host.startswith(pattern[:-1]) and host[len(pattern) - 1 :].isdigit():
            return True
    return False


class Origins:
    def __init__(self, public_url: str | None, allowed_hosts: Sequence[str]) -> None:
        self._public = public_url.rstrip("/") if public_url else None
        self._allowed = tuple(allowed_hosts)

    def of(self, scope: Mapping[str, Any]) -> str | None:
        """The base URL of this request (`https://saip.example.com`), or None when its Host is not an allowed one."""
        if self._public is not None:
            return self._public
        host = ""
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value.decode("latin-1")
                break
        if not host or not host_allowed(host, self._allowed):
            return None
        scheme = "https" if scope.get("scheme") == "https" else "http"
        return f"{scheme}://{host.lower()}"


def resource(origin: str) -> str:
    """The canonical URI of /mcp as RFC 8707 names it: the resource every access token is issued for."""
    return origin + MCP_PATH


def same_resource(asked: str, ours: str) -> bool:
    """Whether a client's `resource` names ours: compared without case in the scheme and host, a trailing slash
    aside (RFC 8707 section 2 asks for the canonical URI, which clients spell in small ways differently)."""

    def canonical(uri: str) -> str:
        scheme, _, rest = uri.partition("://")
        authority, slash, path = rest.partition("/")
        return f"{scheme.lower()}://{authority.lower()}{slash}{path}".rstrip("/")

    return canonical(asked) == canonical(ours)
