"""The network guard: which addresses and hosts each mode refuses, and redirects, bodies and time against a real
local HTTP server (reachable only where a mode grants 127.0.0.1 by name)."""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Iterator

import pytest

from saip.common.netguard import (
    GuardBlocked,
    NetPolicy,
    NetworkMode,
    Reason,
    address_problem,
    check,
    guarded_fetch,
    host_matches,
)
from tests.http_origin import QuietHandler, http_origin

STRICT = NetPolicy(NetworkMode.STRICT)


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("169.254.169.254", "link-local (cloud metadata lives there)"),
        ("fe80::1", "link-local (cloud metadata lives there)"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("fc00::1", "private"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_only_public_addresses_pass_the_address_check(address: str, problem: str | None) -> None:
    assert address_problem(ipaddress.ip_address(address)) == problem


@pytest.mark.parametrize(
    ("host", "pattern", "matches"),
    [
        ("api.example.com", "api.example.com", True),
        ("API.example.com.", "api.example.com", True),
        ("api.example.com", "*.example.com", True),
        ("example.com", "*.example.com", False),
        ("evil-example.com", "*.example.com", False),
        ("anything.test", "*", True),
        ("api.example.com.evil.test", "api.example.com", False),
    ],
)
def test_allowlist_entries(host: str, pattern: str, matches: bool) -> None:
    assert host_matches(host, pattern) is matches


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost:8080/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://10.0.0.5/",
        "http://100.100.100.200/",
        "https://0.0.0.0/",
    ],
)
async def test_strict_refuses_everything_that_is_not_public(url: str) -> None:
    with pytest.raises(GuardBlocked) as refused:
        await check(url, STRICT)
    assert refused.value.reason is Reason.PRIVATE_ADDRESS
    assert "only public addresses can be fetched" in str(refused.value)


async def test_strict_fails_closed_when_the_name_does_not_resolve() -> None:
    with pytest.raises(GuardBlocked) as refused:
        await check("https://no-such-host.invalid/", STRICT)
    assert refused.value.reason is Reason.DNS_FAILURE


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "http:///nohost", "javascript:alert(1)"])
async def test_only_http_urls_with_a_host(url: str) -> None:
    with pytest.raises(GuardBlocked) as refused:
        await check(url, NetPolicy(NetworkMode.OPEN))
    assert refused.value.reason is Reason.BAD_URL


async def test_blocked_refuses_before_anything_is_resolved() -> None:
    with pytest.raises(GuardBlocked) as refused:
        await guarded_fetch("https://example.com/", policy=NetPolicy(NetworkMode.BLOCKED))
    assert refused.value.reason is Reason.NETWORK_BLOCKED
    assert "set sandbox.networkMode" in str(refused.value)


async def test_allowlist_refuses_other_hosts_and_wildcards_do_not_grant_private_addresses() -> None:
    policy = NetPolicy(NetworkMode.ALLOWLIST, hosts_allow=("api.example.com", "*.localhost"))
    with pytest.raises(GuardBlocked) as refused:
        await check("http://127.0.0.1/", policy)
    assert refused.value.reason is Reason.HOST_NOT_ALLOWED
    assert "add it to sandbox.hostsAllow" in str(refused.value)
    with pytest.raises(GuardBlocked) as private:
        await check("http://app.localhost/", policy)
    assert private.value.reason in (Reason.PRIVATE_ADDRESS, Reason.DNS_FAILURE)


class _Handler(QuietHandler):
    """/ok, /big (chunked, no length), /declared-big, /slow, /loop/N (redirects N more times), /to?url=..."""

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/ok":
            self._send(200, b'{"ok": true}', {"Content-Type": "application/json; charset=utf-8"})
        elif path == "/big":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(64):
                chunk = b"x" * 1024
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/declared-big":
            self._send(200, b"x" * 100_000, {})
        elif path == "/slow":
            time.sleep(2)
            self._send(200, b"late", {})
        elif path.startswith("/loop/"):
            left = int(path.rsplit("/", 1)[1])
            target = f"/loop/{left - 1}" if left > 0 else "/ok"
            self._send(302, b"", {"Location": target})
        elif path == "/to":
            self._send(302, b"", {"Location": query.removeprefix("url=")})
        else:
            self._send(404, b"missing", {})

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":  # a HEAD's answer has the headers of a GET's, and no body
            self.wfile.write(body)


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with http_origin(_Handler) as url:
        yield url


GRANTED = NetPolicy(NetworkMode.ALLOWLIST, hosts_allow=("127.0.0.1",))


async def test_a_host_granted_by_name_is_fetched_through_the_checked_address(origin: str) -> None:
    response = await guarded_fetch(f"{origin}/ok", policy=GRANTED)
    assert (response.status, response.content_type, response.text()) == (200, "application/json", '{"ok": true}')


async def test_redirects_are_followed_and_counted(origin: str) -> None:
    followed = await guarded_fetch(f"{origin}/loop/4", policy=GRANTED)  # five redirects
    assert (followed.status, followed.url) == (200, f"{origin}/ok")
    with pytest.raises(GuardBlocked) as refused:
        await guarded_fetch(f"{origin}/loop/5", policy=GRANTED)  # six
    assert refused.value.reason is Reason.TOO_MANY_REDIRECTS


async def test_every_hop_of_a_redirect_is_checked_again(origin: str) -> None:
    for target, reason in [
        ("http://localhost/", Reason.HOST_NOT_ALLOWED),
        ("http://169.254.169.254/latest/meta-data/", Reason.HOST_NOT_ALLOWED),
        ("file:///etc/passwd", Reason.BAD_URL),
    ]:
        with pytest.raises(GuardBlocked) as refused:
            await guarded_fetch(f"{origin}/to?url={target}", policy=GRANTED)
        assert refused.value.reason is reason


class _Hops(_Handler):
    """/redirect/<status>?<url>: that redirect to the URL, whatever the method; /echo: the request it got, as JSON
    (and its method in X-Method, which a HEAD's answer carries without a body)."""

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        path, _, query = self.path.partition("?")
        if path.startswith("/redirect/"):
            self._send(int(path.rsplit("/", 1)[1]), b"", {"Location": query})
            return
        seen = {
            "method": self.command,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode(),
        }
        self._send(200, json.dumps(seen).encode(), {"X-Method": self.command})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any


@pytest.fixture(scope="module")
def two_origins() -> Iterator[tuple[str, str]]:
    """Two origins on 127.0.0.1 (two ports: two origins, as the Fetch standard counts them)."""
    with http_origin(_Hops) as first, http_origin(_Hops) as second:
        yield first, second


CREDENTIALS = {"Authorization": "Bearer tool-token", "Cookie": "session=abc", "Proxy-Authorization": "Basic eHk6eg=="}


async def _seen(url: str, method: str = "GET", body: bytes | None = None) -> dict[str, object]:
    headers = {**CREDENTIALS, "X-Trace": "kept", "Content-Type": "text/plain"}
    response = await guarded_fetch(url, policy=GRANTED, method=method, headers=headers, body=body)
    seen: dict[str, object] = json.loads(response.body)
    return seen


async def test_a_redirect_to_another_origin_drops_the_credentials_the_code_set(two_origins: tuple[str, str]) -> None:
    first, second = two_origins
    across = await _seen(f"{first}/redirect/307?{second}/echo", "POST", b"hello")
    headers = across["headers"]
    assert isinstance(headers, dict)
    assert not {"authorization", "cookie", "proxy-authorization"} & set(headers)
    assert (across["method"], across["body"], headers["x-trace"]) == ("POST", "hello", "kept")
    # Gone for good: a hop back to the first origin does not get them again.
    back = await _seen(f"{first}/redirect/302?{second}/redirect/302?{first}/echo")
    assert isinstance(back["headers"], dict) and "authorization" not in back["headers"]


async def test_a_redirect_within_the_origin_keeps_the_headers(two_origins: tuple[str, str]) -> None:
    first, _ = two_origins
    within = await _seen(f"{first}/redirect/302?/echo")
    headers = within["headers"]
    assert isinstance(headers, dict)
    assert {name: headers[name.lower()] for name in CREDENTIALS} == CREDENTIALS


@pytest.mark.parametrize(
    ("status", "method", "becomes"),
    [
        (303, "POST", "GET"),
        (303, "PUT", "GET"),
        (303, "DELETE", "GET"),
        (303, "HEAD", "HEAD"),
        (301, "POST", "GET"),
        (302, "POST", "GET"),
        (301, "PUT", "PUT"),
        (302, "DELETE", "DELETE"),
        (307, "POST", "POST"),
        (308, "PUT", "PUT"),
    ],
)
async def test_a_redirect_rewrites_the_method_only_where_the_fetch_standard_says(
    two_origins: tuple[str, str], status: int, method: str, becomes: str
) -> None:
    first, _ = two_origins
    body = None if method == "HEAD" else b"payload"
    headers = {"Content-Type": "text/plain"}
    url = f"{first}/redirect/{status}?/echo"
    response = await guarded_fetch(url, policy=GRANTED, method=method, headers=headers, body=body)
    assert response.headers["x-method"] == becomes
    if becomes == "HEAD":
        return
    seen = json.loads(response.body)
    if becomes == method:
        assert (seen["body"], seen["headers"]["content-type"]) == ("payload", "text/plain")
    else:  # the body goes, and the headers that described it
        assert seen["body"] == "" and "content-type" not in seen["headers"]


@pytest.mark.parametrize("path", ["/big", "/declared-big"])
async def test_bodies_are_capped_whether_or_not_they_declare_a_length(origin: str, path: str) -> None:
    small = NetPolicy(NetworkMode.ALLOWLIST, hosts_allow=("127.0.0.1",), max_body=10_000)
    with pytest.raises(GuardBlocked) as refused:
        await guarded_fetch(f"{origin}{path}", policy=small)
    assert refused.value.reason is Reason.BODY_TOO_LARGE
    assert "larger than 10000 bytes" in str(refused.value)


async def test_one_deadline_covers_the_whole_exchange(origin: str) -> None:
    hurried = NetPolicy(NetworkMode.OPEN, timeout=0.3)
    with pytest.raises(GuardBlocked) as refused:
        await guarded_fetch(f"{origin}/slow", policy=hurried)
    assert refused.value.reason is Reason.TIMEOUT


async def test_open_fetches_anything(origin: str) -> None:
    response = await guarded_fetch(f"{origin}/missing", policy=NetPolicy(NetworkMode.OPEN))
    assert (response.status, response.body) == (404, b"missing")
