"""The authorization server's own rules, each on its own: redirect URIs, where a request came to, the access token's
signature, audience and expiry, what a client's metadata document must say, and the use counts the list sums."""

from __future__ import annotations

import json

import pytest
from starlette.responses import RedirectResponse

from saip.common.netguard import NetPolicy, NetworkMode
from saip.gateway.credentials.identity import Credential, Grant, Kind
from saip.gateway.credentials.usage import Summary, Usage, summed
from saip.gateway.oauth import redirects
from saip.gateway.oauth.cimd import DocumentRefused, MetadataDocuments, is_document_url
from saip.gateway.oauth.origin import Origins, host_allowed, same_resource
from saip.gateway.oauth.routes import server_metadata, with_issuer
from saip.gateway.oauth.tokens import AccessTokens
from saip.v1 import gateway_pb2

ORIGIN = "http://127.0.0.1:8282"
RESOURCE = f"{ORIGIN}/mcp"


@pytest.mark.parametrize(
    ("uri", "refused"),
    [
        ("https://chatgpt.com/connector/oauth/callback", False),
        ("http://127.0.0.1:33418/callback", False),
        ("http://localhost/callback", False),
        ("http://[::1]:9/cb", False),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", False),
        ("javascript:alert(1)", True),
        ("JavaScript:alert(1)", True),
        ("data:text/html,x", True),
        ("http://example.com/callback", True),
        ("http://127.0.0.1.attacker.example/cb", True),
        ("https://app.example/cb#fragment", True),
        ("/relative/only", True),
    ],
)
def test_which_redirect_uris_a_client_may_register(uri: str, refused: bool) -> None:
    assert (redirects.problem(uri) is not None) is refused


def test_a_request_s_origin_is_its_host_only_when_allowed_or_the_public_url() -> None:
    origins = Origins(None, ["127.0.0.1:*", "localhost:8282"])
    assert origins.of({"headers": [(b"host", b"127.0.0.1:9000")], "scheme": "http"}) == "http://127.0.0.1:9000"
    assert origins.of({"headers": [(b"host", b"localhost:8282")], "scheme": "https"}) == "https://localhost:8282"
    assert origins.of({"headers": [(b"host", b"localhost:9999")]}) is None
    assert origins.of({"headers": [(b"host", b"evil.example")]}) is None
    assert origins.of({"headers": []}) is None
    public = Origins("https://saip.example.com/", ["127.0.0.1:*"])
    assert public.of({"headers": [(b"host", b"10.0.0.5:8282")]}) == "https://saip.example.com"
    assert not host_allowed("127.0.0.1:80x", ["127.0.0.1:*"])


def test_a_resource_is_ours_as_clients_spell_it() -> None:
    assert same_resource("HTTP://127.0.0.1:8282/mcp/", RESOURCE)
    assert not same_resource("http://127.0.0.1:8282/other", RESOURCE)
    assert not same_resource("http://127.0.0.1:9/mcp", RESOURCE)


def test_an_access_token_names_one_resource_and_expires() -> None:
    now = [1_000_000.0]
    tokens = AccessTokens("k" * 40, 3600, clock=lambda: now[0])
    token = tokens.issue(issuer=ORIGIN, resource=RESOURCE, credential_id="c1", client_id="x", scopes=["tools"])
    claims = tokens.read(token, RESOURCE)
    assert claims is not None and (claims.credential_id, claims.scopes) == ("c1", ("tools",))
    assert tokens.read(token, "http://localhost:8282/mcp") is None  # another resource
    assert AccessTokens("o" * 40, 3600, clock=lambda: now[0]).read(token, RESOURCE) is None  # another key
    head, body, signature = token.split(".")
    assert tokens.read(f"{head}.{body}.{signature[::-1]}", RESOURCE) is None
    now[0] += 3601
    assert tokens.read(token, RESOURCE) is None
    assert tokens.read("not-a-jwt", RESOURCE) is None


def test_a_metadata_document_must_name_itself_and_a_public_client() -> None:
    url = "https://app.example/oauth/client.json"
    documents = MetadataDocuments(NetPolicy(NetworkMode.STRICT), "tools manage")
    good = {"client_id": url, "client_name": "App", "redirect_uris": ["http://127.0.0.1:4/cb"]}
    client = documents.parsed(url, json.dumps(good).encode())
    assert (client.client_id, client.token_endpoint_auth_method, client.scope) == (url, "none", "tools manage")
    for bad in (
        good | {"client_id": "https://other.example/c.json"},
        good | {"client_name": ""},
        good | {"redirect_uris": []},
        good | {"redirect_uris": ["javascript:x"]},
        good | {"token_endpoint_auth_method": "client_secret_basic"},
        good | {"client_secret": "s"},
    ):
        with pytest.raises(DocumentRefused):
            documents.parsed(url, json.dumps(bad).encode())
    with pytest.raises(DocumentRefused):
        documents.parsed(url, b"[1, 2]")
    assert is_document_url(url)
    assert not is_document_url("http://app.example/c.json") and not is_document_url("https://app.example/")
    assert not is_document_url("5b4c9a7e-uuid")


def test_the_server_metadata_advertises_s256_cimd_and_iss() -> None:
    metadata = server_metadata(ORIGIN, dynamic_registration=False).model_dump(exclude_none=True, mode="json")
    assert metadata["issuer"] == ORIGIN  # exactly as the resource metadata and `iss` say it
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert "registration_endpoint" not in metadata
    assert server_metadata(ORIGIN, True).registration_endpoint is not None


def test_an_error_redirect_carries_the_issuer() -> None:
    error = with_issuer(RedirectResponse("http://127.0.0.1:4/cb?error=invalid_request&state=s", 302), ORIGIN)
    assert error.headers["location"].endswith("&iss=http%3A%2F%2F127.0.0.1%3A8282")
    consent = with_issuer(RedirectResponse(f"{ORIGIN}/console/consent?request=r", 302), ORIGIN)
    assert "iss=" not in consent.headers["location"]


def test_use_is_counted_by_minute_and_summed_over_replicas() -> None:
    now = [6_000.0]
    usage = Usage("one", clock=lambda: now[0])
    who = Credential("c1", Kind.NAMED, "bot", Grant.TOOLS)
    usage.seen(who)
    usage.called(who, asked=True)
    usage.called(who, asked=False)
    usage.called(Credential("", Kind.NONE, "", Grant.TOOLS), asked=False)  # no credential: not counted
    now[0] += 120
    mine = usage._tallies["c1"].message(now[0])
    theirs = gateway_pb2.CredentialUsage(
        first_seen=5_000.0, last_seen=6_500.0, minutes=[gateway_pb2.UsageMinute(minute=1, calls=9)]
    )
    total = summed([("c1.aaaa", mine), ("c1.bbbb", theirs)], {}, now[0])
    # The other replica's minute 1 is over an hour before now: only this replica's calls count.
    assert total["c1"] == Summary(first_seen=5_000.0, last_seen=6_500.0, calls=2, questions=1)
    assert list(usage._tallies) == ["c1"]
