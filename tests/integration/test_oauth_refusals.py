"""What saip's authorization server refuses, each with the spec's error and nothing issued: no PKCE, a plain PKCE
method, a redirect URI that does not match, a reused or late code, a token for another resource, a revoked token, a
refresh token used twice, a denied consent, and brute force on /token. Driven over HTTP as a client would, step by
step, so each refusal is seen where it happens."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from saip.common.natsd import LocalNats
from saip.common.tokens import token_hash
from saip.gateway.oauth.service import OAuth
from tests.integration.gateways import ADMIN_HEADERS
from tests.integration.oauth_support import REDIRECT, Flow, Served, oauth_gateway, query_of

pytestmark = pytest.mark.integration


@dataclass
class Here(Flow):
    """A flow against a gateway in this process, whose records a test reads."""

    served: Served | None = None

    @property
    def oauth(self) -> OAuth:
        assert self.served is not None and self.served.gateway.access.oauth is not None
        return self.served.gateway.access.oauth


@pytest.fixture
async def flow(nats_server: LocalNats, tmp_path: Path) -> AsyncIterator[Here]:
    async with oauth_gateway(tmp_path, nats_server.url) as served, httpx.AsyncClient(timeout=10) as http:
        flow = Here(served.url, http, served=served)
        await flow.register()
        yield flow


async def nothing_pending(flow: Here) -> bool:
    oauth = flow.oauth
    return await oauth.records.requests.all() == {} and await oauth.records.codes.all() == {}


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"code_challenge": None, "code_challenge_method": None}, id="no PKCE"),
        pytest.param({"code_challenge_method": "plain"}, id="a plain PKCE method"),
    ],
)
async def test_an_authorization_without_s256_pkce_is_refused(flow: Here, changes: dict[str, str | None]) -> None:
    refused = await flow.authorize(**changes)
    # The client and its redirect URI are known: the error goes back to it, with the state and the issuer.
    assert refused.status_code == 302
    answer = query_of(refused.headers["location"])
    assert (answer["error"], answer["state"], answer["iss"]) == ("invalid_request", "the-state", flow.url)
    assert await nothing_pending(flow)


async def test_a_redirect_uri_that_does_not_match_is_not_redirected_to(flow: Here) -> None:
    refused = await flow.authorize(redirect_uri="http://127.0.0.1:33418/other")
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"
    assert await nothing_pending(flow)


async def test_a_code_exchanged_with_another_redirect_uri_or_verifier_issues_nothing(flow: Here) -> None:
    code = await flow.code()
    moved = await flow.exchange(code, redirect_uri="http://127.0.0.1:33418/other")
    assert moved.status_code == 400 and moved.json()["error"] == "invalid_request"
    guessed = await flow.exchange(code, code_verifier=secrets.token_urlsafe(48))
    assert guessed.status_code == 400 and guessed.json()["error"] == "invalid_grant"
    assert "access_token" not in moved.json() | guessed.json()


async def test_a_reused_code_is_refused_and_revokes_what_it_gave(flow: Here) -> None:
    code = await flow.code()
    first = await flow.exchange(code)
    assert first.status_code == 200
    assert await flow.accepted(first.json()["access_token"])
    again = await flow.exchange(code)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert "access_token" not in again.json()
    # The code was stolen or replayed: the grant it gave is revoked, on this replica at once.
    assert not await flow.accepted(first.json()["access_token"])


async def test_a_late_code_is_refused(flow: Here) -> None:
    code = await flow.code()
    stored = await flow.oauth.records.codes.get(token_hash(code))
    assert stored is not None
    stored.value.expires_at -= 3600  # an hour late (codes last a minute)
    assert await flow.oauth.records.codes.update(token_hash(code), stored.value, stored.revision)
    late = await flow.exchange(code)
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"
    assert "expired" in late.json()["error_description"]


async def test_a_token_for_another_resource_is_never_issued_nor_accepted(flow: Here) -> None:
    elsewhere = "http://127.0.0.1:9/mcp"
    refused = await flow.authorize(resource=elsewhere)
    assert refused.status_code == 302
    assert query_of(refused.headers["location"])["error"] == "invalid_target"
    assert await nothing_pending(flow)
    # A token request naming another resource is refused before its code is looked at.
    code = await flow.code()
    moved = await flow.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=flow.verifier,
        resource=elsewhere,
    )
    assert moved.status_code == 400 and moved.json()["error"] == "invalid_target"
    # A token names this /mcp as the origin it was issued at: the same gateway under another name refuses it.
    issued = await flow.exchange(code)
    assert issued.status_code == 200
    port = urlsplit(flow.url).port
    assert not await flow.accepted(issued.json()["access_token"], f"http://localhost:{port}")
    assert await flow.accepted(issued.json()["access_token"])
    # And it is never an admin token.
    admin = await flow.http.get(
        f"{flow.url}/api/v1/status", headers={"Authorization": f"Bearer {issued.json()['access_token']}"}
    )
    assert admin.status_code == 401


async def test_a_revoked_token_is_refused(flow: Here) -> None:
    tokens = await flow.tokens()
    assert await flow.accepted(tokens["access_token"])
    revoked = await flow.http.post(
        f"{flow.url}/revoke", data={"client_id": flow.client_id, "token": tokens["access_token"]}
    )
    assert revoked.status_code == 200
    assert not await flow.accepted(tokens["access_token"])
    refreshed = await flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


async def test_the_person_revoking_a_client_refuses_its_tokens(flow: Here) -> None:
    tokens = await flow.tokens()
    [listed] = [
        found
        for found in (await flow.http.get(f"{flow.url}/api/v1/clients", headers=ADMIN_HEADERS)).json()["data"][
            "clients"
        ]
        if found["kind"] == "oauth"
    ]
    deleted = await flow.http.delete(f"{flow.url}/api/v1/clients/{listed['id']}", headers=ADMIN_HEADERS)
    assert deleted.status_code == 200, deleted.text
    assert not await flow.accepted(tokens["access_token"])
    refreshed = await flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


async def test_a_refresh_token_used_twice_is_refused_and_revokes_the_grant(flow: Here) -> None:
    tokens = await flow.tokens()
    rotated = await flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert rotated.status_code == 200
    assert rotated.json()["refresh_token"] != tokens["refresh_token"]
    assert await flow.accepted(rotated.json()["access_token"])
    replayed = await flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    assert "access_token" not in replayed.json()
    # Someone holds a copy: the whole grant goes, the newest tokens with it.
    assert not await flow.accepted(rotated.json()["access_token"])
    again = await flow.token(grant_type="refresh_token", refresh_token=rotated.json()["refresh_token"])
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


async def test_a_denied_consent_answers_access_denied_and_issues_nothing(flow: Here) -> None:
    answer = await flow.consent(await flow.authorize(), answer="deny")
    assert (answer["error"], answer["state"], answer["iss"]) == ("access_denied", "the-state", flow.url)
    assert "code" not in answer
    assert await nothing_pending(flow)


async def test_brute_force_on_the_token_endpoint_is_slowed_then_refused(nats_server: LocalNats, tmp_path: Path) -> None:
    async with (
        oauth_gateway(tmp_path, nats_server.url, oauth_token_failure_limit=3) as served,
        httpx.AsyncClient(timeout=10) as http,
    ):
        flow = Here(served.url, http, served=served)
        await flow.register()
        code = await flow.code()
        for _ in range(3):
            guessed = await flow.exchange(secrets.token_urlsafe(32))
            assert guessed.status_code == 400 and guessed.json()["error"] == "invalid_grant"
        # The address used up its failures: even the right code is refused until the minute ends, unspent.
        refused = await flow.exchange(code)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"] == "invalid_request" and int(refused.headers["retry-after"]) >= 1
        assert "access_token" not in refused.json()
        stored = await flow.oauth.records.codes.get(token_hash(code))
        assert stored is not None and not stored.value.used
