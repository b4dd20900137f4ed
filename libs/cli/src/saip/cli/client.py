"""The person's side of the REST API: one small client the command line and the local stack share.

Every /api/v1 answer is the envelope `{ok, message, persisted, restartRequired, warnings, data}` (docs/rest.md); an
error is the same envelope under a 4xx or 5xx status, and becomes an `ApiError` with its message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from saip.cli.home import DEFAULT_HOST, DEFAULT_PORT, gateway_address, home_of, url_of
from saip.common.configuration import ConfigurationError
from saip.common.names import CLI, INTERFACE_HEADER

if TYPE_CHECKING:
    import httpx

ADMIN_TOKEN_FILE = "admin-token"
PREFIX = "/api/v1"


class ApiError(Exception):
    """The gateway could not be reached or refused; the message says what to do."""


def default_url() -> str:
    """SAIP_GATEWAY_URL, else where `saip run` starts the gateway: `gateway.host` and `gateway.port` (their variables,
    else saip.yaml); 127.0.0.1:8282 when those cannot be read (`saip run` says why)."""
    explicit = os.environ.get("SAIP_GATEWAY_URL")
    if explicit:
        return explicit.rstrip("/")
    try:
        return url_of(*gateway_address(os.environ))
    except ConfigurationError:
        return url_of(DEFAULT_HOST, DEFAULT_PORT)


def default_admin_token() -> str | None:
    """SAIP_ADMIN_TOKEN, else the token the local stack keeps in its home (`home`: SAIP_HOME, else saip.yaml)."""
    token = os.environ.get("SAIP_ADMIN_TOKEN")
    if token:
        return token
    try:
        path = home_of(os.environ) / ADMIN_TOKEN_FILE
    except ConfigurationError:
        return None
    return path.read_text().strip() if path.is_file() else None


class GatewayApi:
    def __init__(self, url: str, admin_token: str | None, *, timeout: float = 10.0) -> None:
        if not admin_token:
            raise ApiError(
                "no admin token: set SAIP_ADMIN_TOKEN (make run prints it and keeps it in $SAIP_HOME/admin-token)"
            )
        if not _header_safe(admin_token):  # the token itself is never said: it is a secret, typed wrong or not
            raise ApiError(
                "the admin token holds a character an HTTP header cannot carry (a space, a control character or a "
                "non-ASCII one): give the token as `make run` printed it (SAIP_ADMIN_TOKEN or --admin-token)"
            )
        # httpx is imported by the first client, not with this module: `saip run` reads this module before it starts
        # the fork server, whose start its import would delay, and needs a client only once the gateway answers.
        import httpx

        self.url = gateway_url(url)
        self.shown = without_credentials(self.url)  # what a message says of it
        # The interface header: the gateway records the person's changes and answers as the command line's.
        headers = {"Authorization": f"Bearer {admin_token}", INTERFACE_HEADER: CLI}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> GatewayApi:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One call under /api/v1: its envelope (ok may be false: a failed Local Pass, a broken chain)."""
        import httpx

        try:
            response = self._client.request(method, PREFIX + path, **kwargs)
        except httpx.TransportError as exc:
            raise ApiError(
                f"cannot reach the gateway at {self.shown} ({type(exc).__name__}): is `make run` running? "
                "Set SAIP_GATEWAY_URL if it listens elsewhere."
            ) from None
        return _checked(response)

    def status(self) -> dict[str, Any]:
        return dict(self.call("GET", "/status")["data"])

    def rotate_token(self) -> str:
        return str(self.call("POST", "/mcp-token")["data"]["token"])

    def download(self, path: str, params: dict[str, Any]) -> Iterator[bytes]:
        """A route that streams what it answers (the audit export), as it comes; an error before it starts is the
        envelope's, as `call`'s."""
        import httpx

        try:
            with self._client.stream(
                "GET", PREFIX + path, params=params, timeout=httpx.Timeout(10, read=None)
            ) as response:
                if response.status_code != 200:
                    response.read()
                    _checked(response)
                yield from response.iter_bytes()
        except httpx.TransportError as exc:
            raise ApiError(f"the download from {self.shown} ended ({type(exc).__name__})") from None

    def tail(self, backlog: int) -> Iterator[dict[str, Any]]:
        """The audit tail: the last `backlog` records, then each new one (NDJSON, the one streaming route)."""
        import httpx

        try:
            with self._client.stream(
                "GET", f"{PREFIX}/audit/tail", params={"backlog": backlog}, timeout=httpx.Timeout(10, read=None)
            ) as response:
                if response.status_code != 200:
                    response.read()
                    _checked(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.TransportError as exc:
            raise ApiError(f"the audit stream from {self.shown} ended ({type(exc).__name__})") from None


def gateway_url(url: str) -> str:
    """`url` without its trailing slash, or the ApiError that says it is no gateway's address (a scheme other than
    http(s), no host, a port that is no number)."""
    example = f"give the gateway's address, such as http://127.0.0.1:{DEFAULT_PORT} (--url or SAIP_GATEWAY_URL)"
    try:
        address = urlsplit(url)
        address.port  # noqa: B018 - read for the ValueError of a port that is no number or out of range
    except ValueError:
        raise ApiError(f"the gateway URL {without_credentials(url)!r} cannot be read: {example}") from None
    if address.scheme not in ("http", "https") or not address.hostname:
        raise ApiError(f"the gateway URL {without_credentials(url)!r} is not an http(s) URL with a host: {example}")
    return url.rstrip("/")


def without_credentials(url: str) -> str:
    """`url` as a message may say it: a user and password in it (`http://user:secret@host`) become `***`."""
    return re.sub(r"(//)[^/?#@]*@", r"\1***@", url)


def _header_safe(value: str) -> bool:
    """Whether `value` can be an HTTP header's value as it is: printable ASCII without spaces (a token's characters)."""
    return value.isascii() and value.isprintable() and " " not in value


def _checked(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code < 400 and isinstance(body, dict):
        return body
    said = body.get("message") if isinstance(body, dict) else None
    detail = said or response.text or response.reason_phrase
    if response.status_code == 401:
        raise ApiError(f"the gateway refused the admin token: {detail}")
    raise ApiError(f"{detail} (HTTP {response.status_code})")
