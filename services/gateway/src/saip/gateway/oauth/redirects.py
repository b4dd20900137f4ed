"""Which redirect URIs a client may register (Dynamic Client Registration, a metadata document, saip.yaml).

OAuth 2.1 and the MCP authorization spec: a redirect URI is https, or http on a loopback host (a native client's
local callback), or a private-use scheme of a native app (`cursor://`, `vscode://`); never a scheme that runs or
reads something where it lands (`javascript:`, `data:`, `file:`), never plain http to another host, never a
fragment. The authorization request's URI must then equal a registered one exactly (the MCP SDK's check).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost"})
FORBIDDEN_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "blob", "about"})


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def problem(uri: str) -> str | None:
    """Why `uri` cannot be a redirect URI, as a clause; None when it can."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"'{uri[:200]}' is not a URI"
    scheme = parts.scheme.lower()
    if not scheme:
        return f"'{uri[:200]}' has no scheme; use https, or http on a loopback host"
    if scheme in FORBIDDEN_SCHEMES:
        return f"'{uri[:200]}' uses the {scheme}: scheme, which is never a redirect URI"
    if parts.fragment:
        return f"'{uri[:200]}' has a fragment, which a redirect URI must not have"
    if scheme == "http":
        if not parts.hostname or not is_loopback(parts.hostname):
            return (
                f"'{uri[:200]}' is plain http to a host other than loopback; use https, or http on 127.0.0.1, [::1] "
                "or localhost for a local callback"
            )
        return None
    if scheme == "https" and not parts.hostname:
        return f"'{uri[:200]}' has no host"
    return None


def problems(uris: list[str]) -> str | None:
    """The first problem of any of `uris`, or None when every one can be a redirect URI."""
    return next((found for found in map(problem, uris) if found is not None), None)
