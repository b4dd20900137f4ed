"""Outbound HTTP under a network mode: the one guard in front of every fetch saip makes for a tool or a document.

`blocked` refuses every request. `strict` allows public addresses only: the host is resolved, and the request is
refused when any of its addresses is loopback, link-local (cloud metadata included), private (RFC 1918, unique
local), carrier-grade NAT, multicast, unspecified or otherwise not global; it fails closed when the name does not
resolve. `allowlist` allows the listed hosts (exact names or `*.suffix`): the address check of `strict` still
applies, except to a host listed exactly, which the person granted by name. `open` allows anything.

The connection goes to the address that was checked (the name is sent as Host and TLS server name), so a second DNS
answer cannot swap in a private address. Redirects are followed here, each hop checked again, at most
`max_redirects`, as the Fetch standard (and browsers, and httpx) follow them: a hop to another origin (scheme, host,
port) is sent without the caller's `Authorization`, `Cookie` and `Proxy-Authorization`, and no later hop gets them
back; the method becomes GET, without the body and its `Content-*` headers, on a 303 (but for HEAD) and on a 301 or
302 answering a POST, and is kept, body and all, otherwise (307, 308). The body is read up to `max_body` bytes; the
whole exchange has one deadline.

A secret travels only here (`Binding`): the caller's request carries a marker in its place (a tool's per-run
placeholder, a knowledge URL's `${NAME}`), and each hop to a host the secret is bound to gets the value in its URL,
headers and body; a hop to any other host, a redirect's included, is sent the marker. The marker is never put into
the host name (the host is what the guard checked), and nothing the caller sees of the exchange carries the value.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import anyio

# httpx (with the command line it imports when it can) is imported by the first fetch, not at the start: every
# service and sandbox worker that may fetch imports this module at its start, and most starts never fetch.
if TYPE_CHECKING:
    import httpx

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MIB = 1024 * 1024
REDIRECTS = frozenset({301, 302, 303, 307, 308})
# What the caller's request carries for its own origin only: dropped on a hop to another (the Fetch standard's
# `Authorization`, with the cookie and the proxy's credentials, which a browser never lets a script set).
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
# What describes a body (the Fetch standard's request-body-header names, and its length): gone with the body.
BODY_HEADERS = frozenset({"content-encoding", "content-language", "content-location", "content-type", "content-length"})
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


class NetworkMode(StrEnum):
    BLOCKED = "blocked"
    STRICT = "strict"
    ALLOWLIST = "allowlist"
    OPEN = "open"


class Reason(StrEnum):
    """Why the guard refused; a bounded label for counters and risk events."""

    NETWORK_BLOCKED = "network-blocked"
    PRIVATE_ADDRESS = "private-address"
    HOST_NOT_ALLOWED = "host-not-allowed"
    TOO_MANY_REDIRECTS = "too-many-redirects"
    BODY_TOO_LARGE = "body-too-large"
    BAD_URL = "bad-url"
    DNS_FAILURE = "dns-failure"
    TIMEOUT = "timeout"


class GuardBlocked(Exception):
    """The guard refused a request; the message says what was refused and what to do instead."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class NetPolicy:
    mode: NetworkMode
    hosts_allow: tuple[str, ...] = ()
    max_redirects: int = 5
    max_body: int = 10 * MIB
    timeout: float = 30.0
    # A PEM file of certificate authorities trusted besides the public ones (a private CA's servers); None: the public
    # ones only.
    ca_file: str | None = None


@dataclass(frozen=True)
class Binding:
    """A secret as a request carries it: `marker` stands for `value`, which only `hosts` (exact names or
    `*.suffix`) are sent."""

    marker: str
    value: str
    hosts: tuple[str, ...]

    def bound_to(self, host: str) -> bool:
        return any(host_matches(host, pattern) for pattern in self.hosts)


@dataclass(frozen=True)
class FetchResponse:
    status: int
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def text(self) -> str:
        charset = "utf-8"
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def address_problem(address: IpAddress) -> str | None:
    """What makes an address unfit for `strict` (None when it is public)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address_problem(address.ipv4_mapped)
    checks = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local (cloud metadata lives there)"),
        (address.is_multicast, "multicast"),
        (isinstance(address, ipaddress.IPv4Address) and address in _CGNAT, "carrier-grade NAT"),
        (address.is_private, "private"),
        (not address.is_global, "not publicly routable"),
    )
    return next((problem for matched, problem in checks if matched), None)


def host_matches(host: str, pattern: str) -> bool:
    """An allowlist entry: `*` is any host, `*.example.com` any subdomain of it, anything else the exact host."""
    host, pattern = host.lower().rstrip("."), pattern.lower().rstrip(".")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


async def resolve(host: str, port: int) -> list[IpAddress]:
    """Every address the name resolves to (an address literal is itself)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise GuardBlocked(Reason.DNS_FAILURE, f"The host '{host}' does not resolve ({exc.strerror or exc}).") from None
    addresses: list[IpAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise GuardBlocked(Reason.DNS_FAILURE, f"The host '{host}' does not resolve.")
    return addresses


@dataclass(frozen=True)
class _Target:
    url: str
    host: str
    port: int
    pinned: IpAddress | None


async def check(url: str, policy: NetPolicy) -> _Target:
    """Refuse the URL under the policy, or say which address to connect to."""
    if policy.mode is NetworkMode.BLOCKED:
        raise GuardBlocked(
            Reason.NETWORK_BLOCKED,
            "Network access is blocked for this tool (networkMode 'blocked'); "
            "set sandbox.networkMode to strict, allowlist or open to let it fetch.",
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GuardBlocked(Reason.BAD_URL, f"'{url[:200]}' is not an http(s) URL with a host.")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise GuardBlocked(Reason.BAD_URL, f"'{url[:200]}' has an invalid port.") from None
    if policy.mode is NetworkMode.OPEN:
        return _Target(url, host, port, None)
    granted = False
    if policy.mode is NetworkMode.ALLOWLIST:
        matches = [pattern for pattern in policy.hosts_allow if host_matches(host, pattern)]
        if not matches:
            allowed = ", ".join(policy.hosts_allow) or "none"
            raise GuardBlocked(
                Reason.HOST_NOT_ALLOWED,
                f"The host '{host}' is not in the allowlist ({allowed}); add it to sandbox.hostsAllow to fetch it.",
            )
        granted = any(not pattern.startswith("*") for pattern in matches)
    addresses = await resolve(host, port)
    if not granted:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None:
                raise GuardBlocked(
                    Reason.PRIVATE_ADDRESS,
                    f"The host '{host}' resolves to {address}, a {problem} address; only public addresses can be "
                    "fetched in this network mode.",
                )
    return _Target(url, host, port, addresses[0])


@dataclass(frozen=True)
class _Request:
    url: str
    headers: dict[str, str]
    body: bytes | None


def _substitute(request: _Request, host: str, secrets: Sequence[Binding]) -> _Request:
    """The request as it is sent to `host`: the marker of each secret bound to it replaced by its value."""
    bound = [secret for secret in secrets if secret.marker and secret.bound_to(host)]
    if not bound:
        return request
    url, headers, body = request.url, dict(request.headers), request.body
    for secret in bound:
        url = url.replace(secret.marker, secret.value)
        headers = {key: value.replace(secret.marker, secret.value) for key, value in headers.items()}
        if body is not None:
            body = body.replace(secret.marker.encode(), secret.value.encode())
    if (urlsplit(url).hostname or "") != host:
        # A marker in the authority part would let the value choose where the request goes.
        raise GuardBlocked(
            Reason.BAD_URL,
            f"A secret is placed where it changes the host of '{request.url[:200]}'; put secrets in the path, the "
            "query, a header or the body.",
        )
    return _Request(url, headers, body)


def _withhold(response: FetchResponse, secrets: Sequence[Binding]) -> FetchResponse:
    """What a server echoed of a secret goes back as its marker: the caller never holds the value."""
    body, headers = response.body, response.headers
    for secret in secrets:
        if secret.marker and secret.value:
            body = body.replace(secret.value.encode(), secret.marker.encode())
            headers = {key: value.replace(secret.value, secret.marker) for key, value in headers.items()}
    return replace(response, body=body, headers=headers)


async def guarded_fetch(
    url: str,
    *,
    policy: NetPolicy,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    secrets: Sequence[Binding] = (),
) -> FetchResponse:
    """Fetch under the policy: every hop checked, redirects counted, the body capped; GuardBlocked when refused.
    `secrets` are substituted per hop, into requests to their hosts only."""
    import httpx

    try:
        with anyio.fail_after(policy.timeout):
            async with httpx.AsyncClient(
                follow_redirects=False, trust_env=False, timeout=policy.timeout, verify=_verifying(policy)
            ) as client:
                request = _Request(url, dict(headers or {}), body)
                response = await _follow(client, request, policy, method.upper(), secrets)
                return _withhold(response, secrets)
    except TimeoutError:
        raise GuardBlocked(
            Reason.TIMEOUT, f"No complete answer from '{urlsplit(url).hostname}' within {policy.timeout:g} s."
        ) from None


async def _follow(
    client: httpx.AsyncClient, request: _Request, policy: NetPolicy, method: str, secrets: Sequence[Binding]
) -> FetchResponse:
    for _hop in range(policy.max_redirects + 1):
        target = await check(request.url, policy)
        response = await _send(client, target, policy, method, _substitute(request, target.host, secrets))
        location = response.headers.get("location")
        if response.status not in REDIRECTS or not location:
            return response
        # The next hop starts from the request as the caller wrote it: its markers are substituted for its host.
        request, method = redirected(request, method, response.status, urljoin(request.url, location))
    raise GuardBlocked(
        Reason.TOO_MANY_REDIRECTS, f"More than {policy.max_redirects} redirects; fetch the final URL directly."
    )


def redirected(request: _Request, method: str, status: int, location: str) -> tuple[_Request, str]:
    """The request a redirect makes of `request`, and its method (the Fetch standard's HTTP-redirect fetch)."""
    headers = request.headers
    if origin(location) != origin(request.url):
        headers = {name: value for name, value in headers.items() if name.lower() not in CREDENTIAL_HEADERS}
    body = request.body
    if (status == 303 and method not in ("GET", "HEAD")) or (status in (301, 302) and method == "POST"):
        method, body = "GET", None
        headers = {name: value for name, value in headers.items() if name.lower() not in BODY_HEADERS}
    return _Request(location, headers, body), method


def origin(url: str) -> tuple[str, str, int | None]:
    """A URL's origin: its scheme, host and port (the scheme's default when it names none; None when it is not a
    port, which the hop's check refuses)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").rstrip("."), port


async def _send(
    client: httpx.AsyncClient, target: _Target, policy: NetPolicy, method: str, sent: _Request
) -> FetchResponse:
    """One hop; what it answers names the URL as the caller wrote it (`target.url`), never the one sent."""
    import httpx

    headers, body = sent.headers, sent.body
    request_url = httpx.URL(sent.url)
    extensions = {}
    if target.pinned is not None:
        headers = {**headers, "Host": request_url.netloc.decode("ascii")}
        literal = str(target.pinned) if target.pinned.version == 4 else f"[{target.pinned}]"
        if request_url.scheme == "https":
            extensions["sni_hostname"] = target.host
        request_url = request_url.copy_with(host=literal.strip("[]"))
    request = client.build_request(method, request_url, headers=headers, content=body, extensions=extensions)
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException:
        raise TimeoutError from None
    except httpx.HTTPError as exc:
        raise GuardBlocked(Reason.BAD_URL, f"Could not fetch '{target.url[:200]}': {exc}.") from None
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > policy.max_body:
            raise _too_large(policy)
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > policy.max_body:
                raise _too_large(policy)
            chunks.append(chunk)
    finally:
        await response.aclose()
    return FetchResponse(
        status=response.status_code,
        url=target.url,
        headers={key.lower(): value for key, value in response.headers.items()},
        body=b"".join(chunks),
    )


def _verifying(policy: NetPolicy) -> ssl.SSLContext | bool:
    """How TLS certificates are checked: against the public authorities, and the policy's own file besides."""
    if policy.ca_file is None:
        return True
    import certifi

    context = ssl.create_default_context(cafile=certifi.where())
    context.load_verify_locations(cafile=policy.ca_file)
    return context


def _too_large(policy: NetPolicy) -> GuardBlocked:
    return GuardBlocked(
        Reason.BODY_TOO_LARGE, f"The response body is larger than {policy.max_body} bytes; fetch something smaller."
    )
