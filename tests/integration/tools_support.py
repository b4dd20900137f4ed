"""Shared by the tools integration tests (it holds no tests itself): the tools service in-process on free ports,
with a real nats-server and real sandbox workers, its gRPC client, and what it counts of its proxied calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from saip.tools.config import ToolsSettings
from saip.tools.server import Running, lifespan
from saip.v1 import tools_pb2, tools_pb2_grpc


def settings(nats_url: str, **overrides: Any) -> ToolsSettings:
    values: dict[str, Any] = {
        "nats_url": nats_url,
        "tools_port": 0,
        "tools_metrics_port": 0,
        "tools_sandbox_workers": 1,
        "tools_sandbox_timeout_seconds": 2.0,
        "tools_sandbox_memory_mb": 32,
    }
    return ToolsSettings.load(**(values | overrides))


@asynccontextmanager
async def running_tools(nats_url: str, **overrides: Any) -> AsyncIterator[Running]:
    async with lifespan(settings(nats_url, **overrides), registry=CollectorRegistry()) as tools:
        yield tools


@asynccontextmanager
async def tools_client(port: int) -> AsyncIterator[tools_pb2_grpc.ToolsServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield tools_pb2_grpc.ToolsServiceStub(channel)  # type: ignore[no-untyped-call]


async def save(stub: tools_pb2_grpc.ToolsServiceStub, spec: dict[str, Any], revision: int = 0) -> Any:
    return await stub.SaveDraft(tools_pb2.SaveDraftRequest(spec_json=json.dumps(spec), expected_revision=revision))


async def publish_tested(stub: tools_pb2_grpc.ToolsServiceStub, spec: dict[str, Any]) -> Any:
    """Draft, Local Pass, publish: the only way to publish."""
    await save(stub, spec)
    report = await stub.TestTool(tools_pb2.TestToolRequest(name=spec["name"]))
    assert report.passed, report.error
    return await stub.PublishTool(tools_pb2.PublishToolRequest(name=spec["name"]))


def calls(tools: Running, server: str, outcome: str) -> float | None:
    """The proxied calls the tools service counted for `server` with `outcome`."""
    return tools.metrics.registry.get_sample_value(
        "saip_tools_upstream_calls_total", {"server": server, "outcome": outcome}
    )


def parked_now(tools: Running) -> float | None:
    """The calls parked at an upstream's question on this tools replica."""
    return tools.metrics.registry.get_sample_value("saip_tools_upstream_parked")
