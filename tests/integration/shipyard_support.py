"""Shared by the shipyard integration tests (it holds no tests itself): the tools, knowledge and shipyard services
in-process on a real nats-server, an authored tool and a knowledge tool published to ship, the shipyard's stub (a
shipyard that can be stopped and started again over the same sources), the upstream registry's stub, and the real MCP
SDK client for a shipped server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry

from saip.shipyard.config import ShipyardSettings
from saip.shipyard.server import Running, lifespan
from saip.v1 import (
    knowledge_pb2,
    knowledge_pb2_grpc,
    shipyard_pb2,
    shipyard_pb2_grpc,
    tools_pb2_grpc,
    upstream_pb2_grpc,
)
from tests.integration.knowledge_support import ingest, knowledge_settings, knowledge_stub, running_knowledge
from tests.integration.tools_support import publish_tested, running_tools, tools_client
from tests.unit.tools.specs import document

RUNBOOK = (
    "Restarting the payment gateway. First drain the queue with the drain command, then restart the gateway "
    "service and watch the error rate on the dashboard. If the error rate stays above one percent, roll back. "
) * 8
KNOWLEDGE_TOOL = "runbook_search"
AUTHORED_TOOL = "adder"


@dataclass
class Yard:
    shipyard: shipyard_pb2_grpc.ShipyardServiceStub
    tools: tools_pb2_grpc.ToolsServiceStub
    knowledge: knowledge_pb2_grpc.KnowledgeServiceStub
    running: Running
    home: Path
    upstream: upstream_pb2_grpc.UpstreamServiceStub


def proposal(name: str = "ops", *tools: str, transport: str = "") -> shipyard_pb2.BundleProposal:
    return shipyard_pb2.BundleProposal(
        name=name,
        description="Answers runbook questions and adds numbers.",
        transport=transport,
        tools=list(tools or (AUTHORED_TOOL, KNOWLEDGE_TOOL)),
    )


# The variable the tests' shipped servers require, listed in shipyard.variables.
SHIPPED_VARIABLE = "SHIP_TEST_API_KEY"


@asynccontextmanager
async def running_shipyard(
    home: Path, nats_url: str, tools_port: int, knowledge_port: int, **overrides: Any
) -> AsyncIterator[Running]:
    settings = ShipyardSettings.load(
        home=home,
        nats_url=nats_url,
        shipyard_port=0,
        shipyard_metrics_port=0,
        tools_addr=f"127.0.0.1:{tools_port}",
        knowledge_addr=f"127.0.0.1:{knowledge_port}",
        shipyard_variables=[SHIPPED_VARIABLE],
        **overrides,
    )
    async with lifespan(settings, registry=CollectorRegistry()) as running:
        yield running


def _tool_secrets(home: Path) -> Path:
    """The file through which the tools service may give the tests' tools the shipped variable, as a person would."""
    home.mkdir(parents=True, exist_ok=True)
    secrets = home / "tool-secrets.yaml"
    secrets.write_text(f"{SHIPPED_VARIABLE}:\n  env: {SHIPPED_VARIABLE}\n  hosts: [api.example.com]\n")
    return secrets


@dataclass
class Sources:
    """The tools and knowledge services a shipyard ships from, with their stubs."""

    nats_url: str
    home: Path
    tools_port: int
    knowledge_port: int
    tools: tools_pb2_grpc.ToolsServiceStub
    knowledge: knowledge_pb2_grpc.KnowledgeServiceStub
    upstream: upstream_pb2_grpc.UpstreamServiceStub


@asynccontextmanager
async def sources(nats_url: str, home: Path, **tools_settings: Any) -> AsyncIterator[Sources]:
    """Tools and knowledge with one tool each published (`tools_settings`: more settings of the tools service)."""
    async with AsyncExitStack() as stack:
        tools = await stack.enter_async_context(
            running_tools(nats_url, tools_secrets=_tool_secrets(home), **tools_settings)
        )
        knowledge = await stack.enter_async_context(running_knowledge(knowledge_settings(home, nats_url)))
        tools_stub = await stack.enter_async_context(tools_client(tools.port))
        knowledge_stub_ = await stack.enter_async_context(knowledge_stub(knowledge.port))
        await publish_tested(tools_stub, document(AUTHORED_TOOL))
        await ingest(knowledge_stub_, text=RUNBOOK, name="runbook.md")
        await knowledge_stub_.PublishTool(
            knowledge_pb2.PublishKnowledgeToolRequest(
                name=KNOWLEDGE_TOOL, description="Searches the payment runbook.", pipeline="All documents (simple)"
            )
        )
        tools_channel = await stack.enter_async_context(grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}"))
        upstream = upstream_pb2_grpc.UpstreamServiceStub(tools_channel)  # type: ignore[no-untyped-call]
        yield Sources(nats_url, home, tools.port, knowledge.port, tools_stub, knowledge_stub_, upstream)


@asynccontextmanager
async def shipyard_over(found: Sources, **overrides: Any) -> AsyncIterator[Yard]:
    """A shipyard in front of the sources (stopped on the way out; another one may start over them after)."""
    async with (
        running_shipyard(found.home, found.nats_url, found.tools_port, found.knowledge_port, **overrides) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        stub = shipyard_pb2_grpc.ShipyardServiceStub(channel)  # type: ignore[no-untyped-call]
        yield Yard(stub, found.tools, found.knowledge, running, found.home, found.upstream)


@asynccontextmanager
async def yard(
    nats_url: str, home: Path, tools_settings: Mapping[str, Any] | None = None, **overrides: Any
) -> AsyncIterator[Yard]:
    """Tools and knowledge with one tool each published, and the shipyard in front of them (`overrides`: more
    settings of the shipyard)."""
    async with sources(nats_url, home, **(tools_settings or {})) as found, shipyard_over(found, **overrides) as y:
        yield y


@asynccontextmanager
async def shipped_client(url: str, token: str, *, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def declared_status(y: Yard, name: str) -> shipyard_pb2.ServerStatus | None:
    """A declared server's status, None until the shipyard's start has shipped it (a poll of one key, not a listing)."""
    try:
        return await y.shipyard.GetStatus(shipyard_pb2.ShippedServerRequest(name=name))
    except grpc.aio.AioRpcError as exc:
        if exc.code() != grpc.StatusCode.NOT_FOUND:
            raise
        return None
