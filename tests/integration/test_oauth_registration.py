"""How a client becomes known to saip's authorization server: a Client ID Metadata Document (fetched through the
network guard from a loopback HTTPS server whose test certificate authority saip is told to trust), Dynamic Client
Registration (on by default; a setting turns it off) and a client registered in saip.yaml; and the registrations it
refuses, each with the spec's error and nothing issued."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from saip.common.natsd import LocalNats
from tests.http_origin import QuietHandler
from tests.integration.gateways import ADMIN_HEADERS
from tests.integration.oauth_support import (
    PUBLISHED,
    REDIRECT,
    Person,
    SdkClient,
    listed_clients,
    oauth_gateway,
)
from tests.results import text
from tests.tls_origin import LocalAuthority, https_origin, local_authority

pytestmark = pytest.mark.integration

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636's example S256 challenge


def document(url: str, **changes: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "cimd-client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    } | changes


@contextmanager
def metadata_document(authority: LocalAuthority, body: Callable[[str], dict[str, Any]]) -> Iterator[str]:
    """A client's metadata document at https://localhost:<port>/oauth/client.json; yields its URL."""
    url: list[str] = []

    class Document(QuietHandler):
        def do_GET(self) -> None:
            payload = json.dumps(body(url[0])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "max-age=60")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    handler: Callable[..., BaseHTTPRequestHandler] = Document
    with https_origin(handler, authority) as origin:
        url.append(f"{origin}/oauth/client.json")
        yield url[0]


def trusting(authority: LocalAuthority) -> dict[str, Any]:
    """The settings that let saip fetch a document from this loopback host, signed by this authority."""
    return {
        "oauth_metadata_network_mode": "allowlist",
        "oauth_metadata_hosts_allow": ["localhost"],
        "oauth_metadata_ca_file": authority.ca_file,
    }


async def authorize(url: str, client_id: str, redirect_uri: str = REDIRECT) -> httpx.Response:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        "state": "s1",
    }
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.get(f"{url}/authorize?{urlencode(query)}")


async def test_a_client_with_a_metadata_document_signs_in_by_its_url(nats_server: LocalNats, tmp_path: Path) -> None:
    authority = local_authority(tmp_path / "ca")
    with metadata_document(authority, document) as url:
        async with oauth_gateway(tmp_path, nats_server.url, **trusting(authority)) as served:
            person = Person(served.url, grant="tools")
            client = SdkClient(served, person, name="cimd-client", metadata_url=url, redirect_uri=REDIRECT)
            async with client.connected("auto") as session:
                echoed = await session.call_tool(PUBLISHED, {"text": "by url"})
                assert "echo: by url" in text(echoed)
            assert client.storage.client is not None and client.storage.client.client_id == url  # no registration
            assert person.shown[0]["client"] == {"id": url, "name": "cimd-client", "host": "localhost"}
            [listed] = [found for found in await listed_clients(served.url) if found["kind"] == "oauth"]
            assert listed["client"] == {"id": url, "host": "localhost"} and listed["grant"] == "tools"
            # A redirect URI the document does not list is refused outright (not redirected to).
            refused = await authorize(served.url, url, "http://127.0.0.1:9/elsewhere")
            assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"


@pytest.mark.parametrize(
    ("settings", "body"),
    [
        pytest.param(lambda authority: {}, document, id="the network guard refuses a loopback host by default"),
        pytest.param(
            lambda authority: trusting(authority) | {"oauth_metadata_ca_file": None},
            document,
            id="a certificate authority saip does not trust",
        ),
        pytest.param(
            trusting, lambda url: document(url, client_id="https://elsewhere.example/c.json"), id="another client_id"
        ),
        pytest.param(trusting, lambda url: document(url, redirect_uris=["javascript:alert(1)"]), id="javascript"),
        pytest.param(
            trusting, lambda url: document(url, token_endpoint_auth_method="client_secret_post"), id="a secret"
        ),
    ],
)
async def test_a_metadata_document_saip_cannot_trust_names_no_client(
    nats_server: LocalNats,
    tmp_path: Path,
    settings: Callable[[LocalAuthority], dict[str, Any]],
    body: Callable[[str], dict[str, Any]],
) -> None:
    authority = local_authority(tmp_path / "ca")
    with metadata_document(authority, body) as url:
        async with oauth_gateway(tmp_path, nats_server.url, **settings(authority)) as served:
            refused = await authorize(served.url, url)
            assert refused.status_code == 400
            assert refused.json()["error"] == "invalid_request"
            assert "not found" in refused.json()["error_description"]
            assert await served.gateway.access.oauth.records.requests.all() == {}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "redirect",
    [
        pytest.param("javascript:alert(document.cookie)", id="javascript"),
        pytest.param("http://attacker.example/callback", id="plain http to another host"),
        pytest.param("data:text/html,hi", id="data"),
    ],
)
async def test_a_registration_with_a_redirect_uri_saip_refuses_registers_nothing(
    nats_server: LocalNats, tmp_path: Path, redirect: str
) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served:
        async with httpx.AsyncClient(timeout=10) as http:
            reply = await http.post(
                f"{served.url}/register",
                json={"client_name": "sly", "redirect_uris": [redirect], "token_endpoint_auth_method": "none"},
            )
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"] == "invalid_redirect_uri"
        assert await served.gateway.access.oauth.records.registrations.all() == {}  # type: ignore[union-attr]


async def test_a_loopback_or_https_redirect_uri_registers(nats_server: LocalNats, tmp_path: Path) -> None:
    async with oauth_gateway(tmp_path, nats_server.url) as served, httpx.AsyncClient(timeout=10) as http:
        for redirect in (
            "http://localhost:8976/cb",
            "http://[::1]:8976/cb",
            "https://app.example/cb",
            "cursor://x",
        ):
            reply = await http.post(f"{served.url}/register", json={"client_name": "fine", "redirect_uris": [redirect]})
            assert reply.status_code == 201, (redirect, reply.text)


async def test_dynamic_registration_turned_off_leaves_no_endpoint(nats_server: LocalNats, tmp_path: Path) -> None:
    async with oauth_gateway(tmp_path, nats_server.url, oauth_dynamic_registration=False) as served:
        async with httpx.AsyncClient(timeout=10) as http:
            metadata = (await http.get(f"{served.url}/.well-known/oauth-authorization-server")).json()
            refused = await http.post(f"{served.url}/register", json={"redirect_uris": [REDIRECT]})
        assert "registration_endpoint" not in metadata
        assert metadata["client_id_metadata_document_supported"] is True
        # No route takes it: the path falls to /mcp's guard, which wants a credential.
        assert refused.status_code == 401
        assert await served.gateway.access.oauth.records.registrations.all() == {}  # type: ignore[union-attr]


async def test_a_client_registered_in_configuration_is_known_as_configured(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    configured = [{"id": "team-agent", "name": "Team agent", "redirect-uris": [REDIRECT]}]
    async with oauth_gateway(tmp_path, nats_server.url, oauth_clients=configured) as served:
        sent = await authorize(served.url, "team-agent")
        assert sent.status_code == 302 and "/console/consent?request=" in sent.headers["location"]
        request_id = sent.headers["location"].rpartition("=")[2]
        async with httpx.AsyncClient(timeout=10) as http:
            shown = await http.get(f"{served.url}/api/v1/oauth/requests/{request_id}", headers=ADMIN_HEADERS)
        assert shown.json()["data"]["client"] == {"id": "team-agent", "name": "Team agent", "host": "configured"}
