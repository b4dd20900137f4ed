"""saip as /mcp's authorization server, for the tests: a gateway with OAuth on served over real HTTP (a published tool
from a test serving service beside the probe's management tools), the person at the consent screen, and the MCP
SDK's own OAuth client provider wired to that person.

Until the console's consent page exists, `Person` plays the browser: it follows /authorize to
/console/consent?request=<id>, reads the id there, and answers through the consent screen's REST routes with the
admin token, then hands the client the URL its redirect URI would receive.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import httpx2
import mcp_types as types
from fastmcp.client.auth import OAuth as FastMcpOAuthBase
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from nats.aio.client import Client as NatsClient
from pydantic import AnyUrl

from saip.common import names
from saip.common.natsd import free_port
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from saip.v1 import events_pb2
from tests.integration.gateways import ADMIN_HEADERS, replica_settings
from tests.integration.publishing import Catalog, publishing, served
from tests.integration.replica import ReplicaProbe
from tests.waiting import eventually

TOOLS = "saip.v1.ToolsService"
PUBLISHED = "echo"
MANAGEMENT = "saip_probe_delete"  # DESTRUCTIVE: the gate asks the person
APPROVE = {"approve": ["run"]}
REDIRECT = "http://127.0.0.1:33418/callback"  # a client's local callback; the person's browser plays it here


@dataclass
class Served:
    """A gateway with OAuth on, listening at `url`."""

    gateway: Gateway
    url: str
    catalog: Catalog

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"


@asynccontextmanager
async def oauth_gateway(
    tmp_path: Path, nats_url: str, *, name: str = "one", port: int | None = None, **overrides: Any
) -> AsyncIterator[Served]:
    """A gateway with OAuth on (unless `overrides` say otherwise), serving the published tool `echo` and the probe's
    management tools over HTTP."""
    catalog = Catalog()
    catalog.serve(served(PUBLISHED))
    port = port or free_port()
    async with publishing(TOOLS, catalog) as address:
        settings = replica_settings(
            tmp_path,
            nats_url,
            name,
            **({"gateway_port": port, "tools_addr": address, "oauth_enabled": True} | overrides),
        )
        gateway = Gateway(settings, lambda _: [ReplicaProbe()])
        async with over_http(gateway):
            await eventually(lambda: gateway.registry.tool(PUBLISHED) is not None)
            yield Served(gateway, f"http://127.0.0.1:{port}", catalog)


@dataclass
class Person:
    """The person at the consent screen: approves with `grant`, or denies when `grant` is None."""

    url: str
    grant: str | None = "manage"
    shown: list[dict[str, Any]] = field(default_factory=list)

    async def answer(self, authorization_url: str) -> str:
        """Follow the authorization URL to the consent screen, answer it; the URL the client's redirect URI gets."""
        async with httpx.AsyncClient(timeout=10) as http:
            sent = await http.get(authorization_url)
            assert sent.status_code == 302, sent.text
            consent = urlsplit(sent.headers["location"])
            assert consent.path == "/console/consent", consent
            [request_id] = parse_qs(consent.query)["request"]
            route = f"{self.url}/api/v1/oauth/requests/{request_id}"
            shown = await http.get(route, headers=ADMIN_HEADERS)
            assert shown.status_code == 200, shown.text
            self.shown.append(shown.json()["data"])
            if self.grant is None:
                answered = await http.post(f"{route}/deny", headers=ADMIN_HEADERS)
            else:
                answered = await http.post(f"{route}/approve", headers=ADMIN_HEADERS, json={"grant": self.grant})
            assert answered.status_code == 200, answered.text
            return str(answered.json()["data"]["redirect"])


class Memory(TokenStorage):
    """Where the SDK client keeps its tokens and its registration (a real client keeps them on disk)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def answered(redirect: str) -> AuthorizationCodeResult:
    """What a client's local callback reads from the redirect: the code, the state and the issuer."""
    query = parse_qs(urlsplit(redirect).query)
    if "error" in query:
        raise PermissionError(f"authorization refused: {query['error'][0]}")
    return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0])


class SdkClient:
    """The MCP SDK's OAuth client provider, with the person behind its browser step."""

    def __init__(
        self,
        served: Served,
        person: Person,
        *,
        name: str = "sdk-oauth-client",
        metadata_url: str | None = None,
        redirect_uri: str = REDIRECT,
    ) -> None:
        self.served = served
        self.person = person
        self.name = name
        self.storage = Memory()
        self._redirect: str | None = None
        metadata = OAuthClientMetadata(
            client_name=name,
            redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        self.provider = OAuthClientProvider(
            served.mcp,
            metadata,
            self.storage,
            redirect_handler=self._browse,
            callback_handler=self._callback,
            client_metadata_url=metadata_url,
        )

    async def _browse(self, authorization_url: str) -> None:
        self._redirect = await self.person.answer(authorization_url)

    async def _callback(self) -> AuthorizationCodeResult:
        assert self._redirect is not None, "the browser step did not run"
        return answered(self._redirect)

    @asynccontextmanager
    async def connected(self, mode: str, questions: list[str] | None = None) -> AsyncIterator[Client]:
        """An MCP client over this provider, in `mode` (legacy: 2025-11-25, auto: 2026-07-28), that approves
        every question the gate asks (kept in `questions`)."""
        asked = questions if questions is not None else []

        async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return types.ElicitResult(action="accept", content=APPROVE)  # type: ignore[arg-type]

        async with (
            httpx2.AsyncClient(auth=self.provider, timeout=httpx2.Timeout(30, read=60)) as http,
            Client(
                streamable_http_client(self.served.mcp, http_client=http),
                mode=mode,  # type: ignore[arg-type]
                client_info=types.Implementation(name=self.name, version="1.0"),
                elicitation_callback=approve,
            ) as client,
        ):
            yield client


async def listed_clients(url: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=10) as http:
        reply = await http.get(f"{url}/api/v1/clients", headers=ADMIN_HEADERS)
    assert reply.status_code == 200, reply.text
    return list(reply.json()["data"]["clients"])


async def records_of(nc: NatsClient) -> list[events_pb2.AuditRecord]:
    """Every audit record on the stream (what the trail will chain), oldest first."""
    js = nc.jetstream()
    info = await js.stream_info(names.AUDIT_STREAM)
    found: list[events_pb2.AuditRecord] = []
    if not info.state.messages:
        return found
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        message = await js.get_msg(names.AUDIT_STREAM, seq)
        if message.subject in names.AUDIT_RECORD_SUBJECTS:
            found.append(events_pb2.AuditRecord.FromString(message.data or b""))
    return found


class FastMcpOAuth(FastMcpOAuthBase):
    """fastmcp's OAuth client, its browser step played by the person: the consent answered, then the redirect sent
    to fastmcp's own local callback server once it listens."""

    def __init__(self, person: Person, **options: Any) -> None:
        super().__init__(**options)
        self.person = person
        self._redirect: str | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        self._redirect = await self.person.answer(authorization_url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        redirect = self._redirect
        assert redirect is not None, "the browser step did not run"

        async def navigate() -> None:
            async def arrived() -> bool:
                try:
                    async with httpx.AsyncClient(timeout=5) as http:
                        await http.get(redirect)
                except httpx.TransportError:
                    return False  # its callback server does not listen yet
                return True

            await eventually(arrived)

        async with anyio.create_task_group() as group:
            group.start_soon(navigate)
            return await super().callback_handler()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


@dataclass
class Flow:
    """One public client, registered dynamically, going through the steps by hand."""

    url: str  # where the gateway (this replica) listens
    http: httpx.AsyncClient
    client_id: str = ""
    verifier: str = ""
    public: str | None = None  # gateway.public-url, when the replicas are reached through one (a load balancer)

    @property
    def resource(self) -> str:
        return f"{self.public or self.url}/mcp"

    async def register(self) -> None:
        reply = await self.http.post(
            f"{self.url}/register",
            json={"client_name": "by-hand", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        )
        assert reply.status_code == 201, reply.text
        self.client_id = reply.json()["client_id"]

    async def authorize(self, **changes: str | None) -> httpx.Response:
        self.verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).decode().rstrip("=")
        query: dict[str, str | None] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "the-state",
            "scope": "tools manage",
            "resource": self.resource,
        } | changes
        sent = {name: value for name, value in query.items() if value is not None}
        return await self.http.get(f"{self.url}/authorize?{urlencode(sent)}")

    async def consent(self, sent: httpx.Response, answer: str = "approve") -> dict[str, str]:
        """The person's answer to the request `sent` led to; the query the client's redirect URI receives."""
        assert sent.status_code == 302, sent.text
        request_id = query_of(sent.headers["location"])["request"]
        route = f"{self.url}/api/v1/oauth/requests/{request_id}/{answer}"
        reply = await self.http.post(route, headers=ADMIN_HEADERS, json={"grant": "manage"})
        assert reply.status_code == 200, reply.text
        return query_of(reply.json()["data"]["redirect"])

    async def code(self) -> str:
        return (await self.consent(await self.authorize()))["code"]

    async def token(self, **form: str) -> httpx.Response:
        body = {"client_id": self.client_id, "resource": self.resource} | form
        return await self.http.post(f"{self.url}/token", data=body)

    async def exchange(self, code: str, **changes: str) -> httpx.Response:
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
        return await self.token(**(form | {"code_verifier": self.verifier} | changes))

    async def tokens(self) -> dict[str, Any]:
        reply = await self.exchange(await self.code())
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    async def accepted(self, access_token: str, origin: str | None = None) -> bool:
        """Whether /mcp lets a request with this token through its guard (past it, the MCP transport answers)."""
        headers = MCP_HEADERS | {"Authorization": f"Bearer {access_token}"}
        reply = await self.http.post(f"{origin or self.url}/mcp", headers=headers, json=PING)
        return reply.status_code != 401
