"""Every /api/v1 route answers as /api/docs says it does: the gateway served in-process over real HTTP (as
`python -m saip.gateway` serves it) on real audit, tools and knowledge services and a real NATS. Each answer,
success or error, is validated against the schema the OpenAPI document gives for its route and status, and every
route must have answered 200 and 401 by the end."""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from saip.common.natsd import LocalNats, free_port
from saip.gateway.config import GatewaySettings
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from saip.v1 import common_pb2, events_pb2
from tests.integration.audit_support import running_audit
from tests.integration.gateways import ADMIN, ADMIN_HEADERS, replica_settings
from tests.integration.knowledge_support import knowledge_settings, running_knowledge
from tests.integration.oauth_support import REDIRECT, Flow, query_of
from tests.integration.shipyard_support import running_shipyard
from tests.integration.tools_support import running_tools
from tests.model_server import MODEL, say, scripted_model
from tests.unit.tools.specs import document
from tests.upstreams.running import ECHO, started
from tests.waiting import eventually

pytestmark = pytest.mark.integration

NOTE = "# Shifts\n\nThe night shift restarts the broker at two and writes it in the log."


class Contract:
    """The OpenAPI document the gateway serves, and the answers checked against it."""

    def __init__(self, openapi: dict[str, Any]) -> None:
        self.openapi = openapi
        self.answered: set[tuple[str, str, int]] = set()

    def operations(self) -> set[tuple[str, str]]:
        return {
            (method.upper(), route)
            for route, operations in self.openapi["paths"].items()
            if route.startswith("/api/v1/")
            for method in operations
        }

    async def check(self, api: httpx.AsyncClient, method: str, route: str, status: int, **request: Any) -> Any:
        """Send one request to `route` (its path parameter, {name}, {question_id} or {serverId}, filled in by `name=`),
        expect `status`, validate the body; returns the envelope's data. The name is sent percent-encoded, as the
        command line sends it, so a name with a slash is one path parameter."""
        return (await self._answer(api, method, route, status, **request))["data"]

    async def refusal(self, api: httpx.AsyncClient, method: str, route: str, status: int, **request: Any) -> str:
        """`check` for a refusal: its message."""
        return str((await self._answer(api, method, route, status, **request))["message"])

    async def _answer(self, api: httpx.AsyncClient, method: str, route: str, status: int, **request: Any) -> Any:
        name = quote(request.pop("name", "x"), safe="")
        reply = await api.request(method, re.sub(r"\{\w+\}", name, route), **request)
        assert reply.status_code == status, f"{method} {route}: {reply.status_code} {reply.text}"
        documented = self.openapi["paths"][route][method.lower()]["responses"].get(str(status))
        assert documented is not None, f"{method} {route} answered {status}, which /api/docs does not list"
        schema = documented["content"]["application/json"]["schema"]
        body = reply.json()
        Draft202012Validator({**schema, "components": self.openapi["components"]}).validate(body)
        self.answered.add((method, route, status))
        return body

    def fails(self, reply: httpx.Response, status: int) -> None:
        """An answer no route documents (an unknown path) is still a Failure envelope."""
        assert reply.status_code == status, reply.text
        failure = {"$ref": "#/components/schemas/Failure", "components": self.openapi["components"]}
        Draft202012Validator(failure).validate(reply.json())

    def unanswered(self, status: int) -> set[tuple[str, str]]:
        return {(method, route) for method, route in self.operations() if (method, route, status) not in self.answered}


@asynccontextmanager
async def served(settings: GatewaySettings) -> AsyncIterator[tuple[Gateway, httpx.AsyncClient, Contract]]:
    gateway = Gateway(settings)
    url = f"http://127.0.0.1:{settings.gateway_port}"
    async with over_http(gateway), httpx.AsyncClient(base_url=url, headers=ADMIN_HEADERS, timeout=60) as api:
        openapi = (await api.get("/api/openapi.json")).json()
        yield gateway, api, Contract(openapi)


async def test_every_route_answers_as_the_openapi_document_says(nats_server: LocalNats, tmp_path: Path) -> None:
    url = nats_server.url
    with scripted_model(say("The sky is blue.")) as model:
        async with (
            running_audit(url) as audit,
            running_tools(url) as tools,
            running_knowledge(knowledge_settings(tmp_path / "knowledge", url)) as knowledge,
            running_shipyard(tmp_path / "shipyard", url, tools.port, knowledge.port) as shipyard,
        ):
            ports = Ports(audit=audit.port, tools=tools.port, knowledge=knowledge.port, shipyard=shipyard.port)
            contract = await _every_route(tmp_path, url, ports, model.url)
    # Every route of the OpenAPI document answered as documented, with the admin token and without it (but the
    # console's question whether it is signed in, which any browser may ask).
    assert contract.unanswered(200) == set()
    assert contract.unanswered(401) == {("GET", "/api/v1/session")}


@dataclass(frozen=True)
class Ports:
    """Where the services the gateway calls listen."""

    audit: int
    tools: int
    knowledge: int
    shipyard: int


async def _every_route(tmp_path: Path, url: str, ports: Ports, model: str) -> Contract:
    """The gateway on the services' ports and the model's URL, each route asked in turn; the contract that saw them."""
    settings = replica_settings(
        tmp_path,
        url,
        "one",
        gateway_port=free_port(),
        tools_addr=f"127.0.0.1:{ports.tools}",
        knowledge_addr=f"127.0.0.1:{ports.knowledge}",
        shipyard_addr=f"127.0.0.1:{ports.shipyard}",
        chat_base_url=model,
        chat_model=MODEL,
        management_out_of_band_approvals=True,
        oauth_enabled=True,
    )
    settings.audit_addr = f"127.0.0.1:{ports.audit}"
    async with served(settings) as (gateway, api, contract):
        await _approvals_routes(gateway, api, contract)
        await _gateway_routes(api, contract)
        await _clients_routes(api, contract)
        await _monitor_routes(gateway, api, contract)
        await _tools_routes(api, contract)
        await _knowledge_routes(api, contract)
        await _shipyard_routes(api, contract)
        await _chat_routes(api, contract)
        with started("http", tmp_path / "upstream.json", [ECHO]) as upstream:
            await _upstream_routes(api, contract, upstream.url)
        async with httpx.AsyncClient(base_url=str(api.base_url), timeout=10) as anonymous:
            await _console_routes(anonymous, contract)
            for method, route in sorted(contract.operations() - SIGN_IN):
                await contract.check(anonymous, method, route, 401)
    return contract


# The console's sign-in answers without the admin token: it is how a browser gets its session.
SIGN_IN = {("GET", "/api/v1/session"), ("POST", "/api/v1/session")}


async def _console_routes(browser: httpx.AsyncClient, contract: Contract) -> None:
    """The console's session and live feed, as a browser uses them (its cookie, its CSRF proof)."""
    assert (await contract.check(browser, "GET", "/api/v1/session", 200)) == {"signedIn": False}
    await contract.check(browser, "POST", "/api/v1/session", 401, json={"token": "w" * 40})
    await contract.check(browser, "POST", "/api/v1/session", 422, json={})
    csrf = (await contract.check(browser, "POST", "/api/v1/session", 200, json={"token": ADMIN}))["csrf"]
    assert (await contract.check(browser, "GET", "/api/v1/session", 200))["signedIn"] is True
    feed = contract.openapi["paths"]["/api/v1/events"]["get"]["responses"]["200"]["content"]
    with anyio.fail_after(10):
        async with browser.stream("GET", "/api/v1/events") as reply:
            assert reply.status_code == 200 and reply.headers["content-type"].split(";")[0] in feed
            assert await anext(reply.aiter_lines()) == "retry: 2000"
    contract.answered.add(("GET", "/api/v1/events", 200))
    await contract.check(browser, "DELETE", "/api/v1/session", 403)
    await contract.check(browser, "DELETE", "/api/v1/session", 200, headers={"X-Saip-Csrf": csrf})
    browser.cookies.clear()


async def test_a_missing_service_a_service_away_a_configured_token_and_no_route_answer_in_the_same_shape(
    nats_server: LocalNats, tmp_path: Path
) -> None:
    # No tools or knowledge address, nothing on the audit address, and a token set in configuration.
    settings = replica_settings(
        tmp_path, nats_server.url, "two", gateway_port=free_port(), mcp_server_auth_token="c" * 40
    )
    async with served(settings) as (_, api, contract):
        for method in ("POST", "DELETE"):
            await contract.check(api, method, "/api/v1/mcp-token", 409)
        reply = await api.get("/api/v1/knowledge/status")
        assert reply.json()["message"] == (
            "The knowledge service is not configured: set knowledge.addr (SAIP_KNOWLEDGE_ADDR) and restart the gateway."
        )
        await contract.check(api, "GET", "/api/v1/knowledge/status", 503)
        await contract.check(api, "GET", "/api/v1/tools", 503)
        await contract.check(api, "GET", "/api/v1/audit/overview", 503)
        assert (
            (await api.get("/api/v1/audit/overview"))
            .json()["message"]
            .startswith("The audit service is not reachable right now")
        )
        nowhere = await api.get("/api/v1/nowhere")
        assert (nowhere.status_code, nowhere.json()["message"]) == (
            404,
            "There is no GET /api/v1/nowhere; /api/docs lists the routes.",
        )
        wrong = await api.put("/api/v1/tools")
        assert (wrong.status_code, wrong.headers["allow"], wrong.json()["message"]) == (
            405,
            "GET, POST",
            "/api/v1/tools takes GET, POST, not PUT; /api/docs lists each.",
        )
        templated = await api.patch("/api/v1/tools/word-count")
        assert (templated.status_code, templated.headers["allow"]) == (405, "DELETE, GET")
        garbled = await api.post("/api/v1/tools", content=b"{bad", headers={"content-type": "application/json"})
        assert (garbled.status_code, garbled.json()["message"]) == (
            422,
            "Invalid request: the body is not JSON (Expecting property name enclosed in double quotes at character "
            "1). Send it again as /api/docs describes.",
        )


async def _approvals_routes(gateway: Gateway, api: httpx.AsyncClient, contract: Contract) -> None:
    """Two questions from a 2026-07-28 client that cannot ask, parked for the person: one approved, one declined."""
    await contract.check(api, "POST", "/api/v1/mcp-token", 200)
    await eventually(lambda: gateway.registry.tool("saip_tools_set_exposure") is not None)
    client = Client(gateway.mcp, mode="auto", client_info=types.Implementation(name="cron", version="1"))
    async with client:
        for auto in (True, False):
            arguments = {"autoExpose": auto, "tools": []}
            asked = await client.session.call_tool("saip_tools_set_exposure", arguments, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)

    async def both_waiting() -> list[dict[str, Any]] | None:
        found = (await contract.check(api, "GET", "/api/v1/approvals", 200))["approvals"]
        return found if len(found) == 2 else None

    first, second = await eventually(both_waiting)
    assert first["question"].startswith("[DESTRUCTIVE] cron 1 wants to run saip_tools_set_exposure")
    approved = await contract.check(api, "POST", "/api/v1/approvals/{question_id}/approve", 200, name=first["id"])
    assert approved["answer"] == "approved"
    await contract.check(api, "POST", "/api/v1/approvals/{question_id}/decline", 200, name=second["id"])
    await contract.check(api, "POST", "/api/v1/approvals/{question_id}/decline", 400, name=first["id"])


async def _gateway_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    status = await contract.check(api, "GET", "/api/v1/status", 200)
    assert status["services"] == {"nats": "ok", "audit": "ok", "tools": "ok", "knowledge": "ok", "shipyard": "ok"}
    await contract.check(api, "GET", "/api/v1/management/status", 200)
    assert (await contract.check(api, "POST", "/api/v1/mcp-token", 200))["token"]
    assert await contract.check(api, "DELETE", "/api/v1/mcp-token", 200) == {"removed": True}


async def _clients_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    """A named token made, listed and revoked; how each client connects; one client's sign-in approved and one denied
    at the consent screen's routes."""
    made = await contract.check(api, "POST", "/api/v1/clients", 200, json={"name": "contract-bot", "scope": "manage"})
    assert made["token"] and made["client"]["grant"] == "manage"
    await contract.check(api, "POST", "/api/v1/clients", 409, json={"name": "contract-bot"})
    await contract.check(api, "POST", "/api/v1/clients", 422, json={"name": "x", "scope": "everything"})
    listed = await contract.check(api, "GET", "/api/v1/clients", 200)
    assert [client["name"] for client in listed["clients"]] == ["contract-bot"]
    snippets = await contract.check(api, "GET", "/api/v1/clients/snippets", 200)
    assert snippets["url"] == f"{str(api.base_url).rstrip('/')}/mcp"
    await contract.check(api, "DELETE", "/api/v1/clients/{client_id}", 200, name=made["client"]["id"])
    await contract.check(api, "DELETE", "/api/v1/clients/{client_id}", 404, name=made["client"]["id"])
    flow = Flow(str(api.base_url).rstrip("/"), api)
    await flow.register()
    for answer in ("approve", "deny"):
        sent = await flow.authorize()
        request_id = query_of(sent.headers["location"])["request"]
        shown = await contract.check(api, "GET", "/api/v1/oauth/requests/{request_id}", 200, name=request_id)
        assert shown["client"]["name"] == "by-hand"
        body = {"grant": "manage"} if answer == "approve" else None
        route = f"/api/v1/oauth/requests/{{request_id}}/{answer}"
        redirect = (await contract.check(api, "POST", route, 200, name=request_id, json=body))["redirect"]
        assert redirect.startswith(REDIRECT)
        await contract.check(api, "POST", route, 404, name=request_id, json=body)  # answered once
    await contract.check(api, "GET", "/api/v1/oauth/requests/{request_id}", 404, name="nosuchrequest")


async def _monitor_routes(gateway: Gateway, api: httpx.AsyncClient, contract: Contract) -> None:
    # One chained record, so the tail has a line to send.
    record = events_pb2.ManagementCall(
        id=str(uuid.uuid4()), tool="saip_monitor_overview", outcome=common_pb2.OUTCOME_OK
    )
    assert await gateway.publisher.management_call(record) is None

    async def chained() -> bool:
        data = await contract.check(api, "GET", "/api/v1/audit/overview", 200)
        return bool(data["audit"]["chain"]["length"] >= 1)

    await eventually(chained)
    for route in ("management-log", "tool-calls", "risk-events", "hitl", "system", "logs"):
        await contract.check(api, "GET", f"/api/v1/audit/{route}", 200)
    await contract.check(api, "GET", "/api/v1/audit/logs", 422, params={"level": "LOUD"})
    assert (await contract.check(api, "GET", "/api/v1/audit/verify", 200))["ok"] is True
    await contract.check(api, "GET", "/api/v1/audit/management-log", 422, params={"limit": 0})
    await contract.check(api, "GET", "/api/v1/audit/tail", 422, params={"backlog": 0})
    # The one streaming route: NDJSON, as its documented content type says.
    tail = contract.openapi["paths"]["/api/v1/audit/tail"]["get"]["responses"]["200"]["content"]
    with anyio.fail_after(10):
        async with api.stream("GET", "/api/v1/audit/tail", params={"backlog": 1}) as reply:
            assert reply.status_code == 200 and reply.headers["content-type"] in tail
            first = await anext(reply.aiter_lines())
    assert '"tool": "saip_monitor_overview"' in first
    contract.answered.add(("GET", "/api/v1/audit/tail", 200))
    await _safety_routes(api, contract)
    await _trace_routes(api, contract)


async def _safety_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    [call] = (await contract.check(api, "GET", "/api/v1/audit/management-log", 200, params={"operator": "ai"}))[
        "entries"
    ]
    opened = await contract.check(api, "GET", "/api/v1/audit/management-log/{cursor}", 200, name=str(call["cursor"]))
    assert opened["tool"] == "saip_monitor_overview"
    await contract.check(api, "GET", "/api/v1/audit/management-log/{cursor}", 404, name="999999")
    await contract.check(api, "GET", "/api/v1/audit/management-log", 422, params={"since": "yesterday"})
    # The export streams, as its documented content types say.
    documented = contract.openapi["paths"]["/api/v1/audit/export"]["get"]["responses"]["200"]["content"]
    for form in ("jsonl", "csv"):
        reply = await api.get("/api/v1/audit/export", params={"format": form, "tool": "saip_monitor_overview"})
        assert reply.status_code == 200 and reply.headers["content-type"].split(";")[0] in documented
        assert "saip_monitor_overview" in reply.text
    contract.answered.add(("GET", "/api/v1/audit/export", 200))
    await contract.check(api, "GET", "/api/v1/audit/export", 422, params={"format": "xml"})


async def _trace_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    # The audit service's spans of the calls above are traces too (REST itself is not traced on the gateway's side).
    async def kept() -> list[dict[str, Any]]:
        return list((await contract.check(api, "GET", "/api/v1/traces", 200))["traces"])

    newest = (await eventually(kept))[0]
    tree = await contract.check(api, "GET", "/api/v1/traces/{trace_id}", 200, name=newest["traceId"])
    assert tree["traceId"] == newest["traceId"] and tree["spanCount"] >= 1
    await contract.check(api, "GET", "/api/v1/traces", 422, params={"minDurationMs": -1})
    await contract.check(api, "GET", "/api/v1/traces/{trace_id}", 422, name="not-a-trace")


async def _tools_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    spec = document("contract")
    await contract.check(api, "POST", "/api/v1/tools", 200, json={"spec": spec})
    await contract.check(api, "GET", "/api/v1/tools", 200)
    await contract.check(api, "POST", "/api/v1/tools/risk", 200, json={"name": "contract"})
    await contract.check(api, "GET", "/api/v1/tools/{name}", 200, name="contract")
    tested = await contract.check(api, "POST", "/api/v1/tools/{name}/test", 200, name="contract")
    assert tested["localPass"] and tested["passed"]
    planned = await contract.check(api, "GET", "/api/v1/tools/{name}/publish", 200, name="contract")
    assert planned["refused"] is None and planned["risk"]["risk"] == "L0"
    await contract.check(api, "POST", "/api/v1/tools/{name}/publish", 200, name="contract")
    exposure = await contract.check(api, "GET", "/api/v1/tools/exposure", 200)
    body = {"autoExpose": True, "tools": [], "expectedRevision": exposure["revision"]}
    await contract.check(api, "PUT", "/api/v1/tools/exposure", 200, json=body)
    await contract.check(api, "DELETE", "/api/v1/tools/{name}", 200, name="contract")
    await contract.check(api, "GET", "/api/v1/tools/{name}", 404, name="ghost")
    await contract.check(api, "POST", "/api/v1/tools", 422, json={})


async def _chat_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    answered = await contract.check(api, "POST", "/api/v1/chat/ask", 200, json={"prompt": "What colour is the sky?"})
    assert answered["answer"] == "The sky is blue."
    listed = await contract.check(api, "GET", "/api/v1/chat/conversations", 200)
    assert [entry["conversationId"] for entry in listed["conversations"]] == [answered["conversationId"]]
    whole = await contract.check(
        api, "GET", "/api/v1/chat/conversations/{conversation_id}", 200, name=answered["conversationId"]
    )
    assert [turn["answer"] for turn in whole["turns"]] == ["The sky is blue."]
    await contract.check(api, "GET", "/api/v1/chat/conversations/{conversation_id}", 404, name="nobody")
    await contract.check(api, "POST", "/api/v1/chat/ask", 422, json={"prompt": ""})
    # A method's refusal (ok false, nothing to show) is an error under its status, not a 200.
    unknown = {"prompt": "And at night?", "conversationId": "nobody"}
    refused = await api.post("/api/v1/chat/ask", json=unknown)
    assert (refused.status_code, refused.json()["ok"], refused.json()["data"]) == (400, False, None)
    assert "nobody" in refused.json()["message"]


async def _upstream_routes(api: httpx.AsyncClient, contract: Contract, url: str) -> None:
    server = {"id": "echoes", "transport": "streamable-http", "url": url, "docsUrl": "https://x.test"}
    await contract.check(api, "GET", "/api/v1/servers/catalog", 200, params={"query": "vendor"})
    await contract.check(api, "POST", "/api/v1/servers/risk", 200, json={"server": server})
    await contract.check(api, "POST", "/api/v1/servers/test", 200, json={"server": server})
    await contract.check(api, "POST", "/api/v1/servers", 200, json=server)
    # The person's own variable is not set: the catalog server is registered, and disabled until it is.
    await contract.check(api, "POST", "/api/v1/servers/catalog", 200, json={"catalogName": "sentry"})

    async def connected() -> bool:
        listed = await contract.check(api, "GET", "/api/v1/servers", 200)
        return any(found["id"] == "echoes" and found["state"] == "connected" for found in listed)

    await eventually(connected)
    await contract.check(api, "GET", "/api/v1/servers/{serverId}/tools", 200, name="echoes")
    await contract.check(api, "GET", "/api/v1/servers/status", 200)
    change = {"add": [{"serverId": "echoes", "tool": "echo", "hitl": True}]}
    planned = await contract.check(api, "POST", "/api/v1/exposure/plan", 200, json=change)
    assert planned["refused"] == [], planned
    await contract.check(api, "POST", "/api/v1/exposure", 200, json=change)
    exposed = await contract.check(api, "GET", "/api/v1/exposure", 200)
    assert [tool["name"] for tool in exposed["tools"]] == ["echo"]
    await contract.check(api, "POST", "/api/v1/servers/{serverId}/reconnect", 200, name="echoes")
    await contract.check(api, "DELETE", "/api/v1/servers/{serverId}", 200, name="sentry")
    await contract.check(api, "DELETE", "/api/v1/servers/{serverId}", 200, name="echoes")
    await contract.check(api, "POST", "/api/v1/exposure", 400, json={"add": [{"serverId": "gone", "tool": "echo"}]})
    await contract.check(api, "POST", "/api/v1/exposure", 400, json={})


async def _knowledge_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    # Document and pipeline names are free text: one with a slash is still addressed by its name.
    await contract.check(api, "POST", "/api/v1/knowledge/documents", 200, json={"text": NOTE, "name": "ops/shifts"})
    await contract.check(api, "GET", "/api/v1/knowledge/documents", 200)
    await contract.check(api, "GET", "/api/v1/knowledge/status", 200)
    await contract.check(
        api, "PUT", "/api/v1/knowledge/pipelines/{name}", 200, name="Shifts/night", json={"documents": ["ops/shifts"]}
    )
    await contract.check(api, "GET", "/api/v1/knowledge/pipelines", 200)
    found = await contract.check(api, "POST", "/api/v1/knowledge/search", 200, json={"query": "night shift"})
    assert found["results"]
    await contract.check(api, "GET", "/api/v1/knowledge/suggestions", 200)
    body = {"name": "shift_answers", "description": "Answers questions about shifts.", "pipeline": "Shifts/night"}
    await contract.check(api, "POST", "/api/v1/knowledge/tools", 200, json=body)
    published = await contract.check(api, "GET", "/api/v1/knowledge/tools", 200)
    assert [tool["name"] for tool in published["tools"]] == ["shift_answers"]
    await contract.check(api, "DELETE", "/api/v1/knowledge/tools/{name}", 200, name="shift_answers")
    await contract.check(api, "DELETE", "/api/v1/knowledge/pipelines/{name}", 200, name="Shifts/night")
    await contract.check(api, "DELETE", "/api/v1/knowledge/documents/{name}", 200, name="ops/shifts")
    await contract.check(api, "DELETE", "/api/v1/knowledge/documents/{name}", 404, name="ghost")
    await contract.check(api, "POST", "/api/v1/knowledge/documents", 422, json={})
    await _uploads(api, contract)


async def _uploads(api: httpx.AsyncClient, contract: Contract) -> None:
    """A file sent with the request (the console's upload), its progress streamed when the request asks for it."""
    file = {"filename": "rota.md", "contentBase64": base64.b64encode(b"# Rota\n\nAda takes Mondays.").decode()}
    async with api.stream(
        "POST", "/api/v1/knowledge/documents", json={"upload": file}, headers={"Accept": "application/x-ndjson"}
    ) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) async for line in reply.aiter_lines()]
    assert lines[0]["progress"]["message"] == "'rota.md' read: 1 chunk to index"
    assert lines[-1]["status"] == 200 and lines[-1]["envelope"]["data"]["document"]["sourceKind"] == "upload"
    # The same file again, streamed: the service's refusal is the last line, under the status the route would give.
    async with api.stream(
        "POST", "/api/v1/knowledge/documents", json={"upload": file}, headers={"Accept": "application/x-ndjson"}
    ) as reply:
        last = json.loads([line async for line in reply.aiter_lines()][-1])
    assert last["status"] == 409 and last["envelope"]["message"].startswith("A document named 'rota.md' exists")
    bad = {"upload": {"filename": "rota.exe", "contentBase64": file["contentBase64"]}, "name": "other"}
    refused = await api.post("/api/v1/knowledge/documents", json=bad)
    assert refused.status_code == 400 and "'rota.exe' has '.exe', an unsupported type" in refused.json()["message"]
    garbled = await contract.check(
        api, "POST", "/api/v1/knowledge/documents", 422, json={"upload": {"filename": "a.md", "contentBase64": "%%"}}
    )
    assert garbled is None
    await contract.check(api, "DELETE", "/api/v1/knowledge/documents/{name}", 200, name="rota.md")


async def _shipyard_routes(api: httpx.AsyncClient, contract: Contract) -> None:
    await contract.check(api, "POST", "/api/v1/tools", 200, json={"spec": document("shipped_adder")})
    await contract.check(api, "POST", "/api/v1/tools/{name}/test", 200, name="shipped_adder")
    proposal = {"name": "contract", "description": "Adds numbers.", "tools": ["shipped_adder"]}
    assert (await contract.check(api, "POST", "/api/v1/shipyard/validate", 200, json=proposal))["ok"]
    assert (await contract.check(api, "POST", "/api/v1/shipyard/servers", 200, json=proposal))["version"] == 1
    await contract.check(api, "GET", "/api/v1/shipyard/servers", 200)
    await contract.check(api, "GET", "/api/v1/shipyard/shippable", 200)
    await contract.check(api, "GET", "/api/v1/shipyard/targets", 200)
    plan = await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}/plan", 200, name="contract")
    assert plan["version"] == 1 and plan["command"] and plan["refused"] is None
    running = await contract.check(api, "POST", "/api/v1/shipyard/servers/{name}/run", 200, name="contract", json={})
    assert running["state"] == "running" and "token" not in running
    await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}", 200, name="contract")
    await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}/logs", 200, name="contract")
    token = await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}/token", 200, name="contract")
    assert len(token["token"]) >= 32 and token["endpoint"] == running["endpoint"]
    await contract.check(api, "POST", "/api/v1/shipyard/servers/{name}/stop", 200, name="contract")
    await contract.check(api, "POST", "/api/v1/shipyard/servers/{name}/stop", 400, name="contract")
    compose = {"target": "compose"}
    exported = await contract.check(
        api, "GET", "/api/v1/shipyard/servers/{name}/export", 200, name="contract", params=compose
    )
    assert exported["command"] == "docker compose -f compose.yaml -p saip-shipped-contract up -d"
    await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}/export", 422, name="contract")
    archive = await api.get("/api/v1/shipyard/servers/contract/export/archive", params=compose)
    documented = contract.openapi["paths"]["/api/v1/shipyard/servers/{name}/export/archive"]["get"]["responses"]
    assert archive.status_code == 200 and archive.headers["content-type"] in documented["200"]["content"]
    contract.answered.add(("GET", "/api/v1/shipyard/servers/{name}/export/archive", 200))
    # A name no server can have is the rule's refusal on every route that takes one, never the service away.
    for method, route in sorted(contract.operations()):
        if route.startswith("/api/v1/shipyard/servers/{name}"):
            refused = await contract.refusal(api, method, route, 400, name="Ñ", params=compose, json={})
            assert "is not a server name; use 1 to 40 lower-case letters" in refused, (method, route)
    await contract.check(api, "DELETE", "/api/v1/shipyard/servers/{name}", 200, name="contract")
    await contract.check(api, "GET", "/api/v1/shipyard/servers/{name}", 404, name="contract")
    await contract.check(api, "POST", "/api/v1/shipyard/validate", 422, json={})
