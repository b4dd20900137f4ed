"""An in-process knowledge service on a real nats-server with Qdrant Edge in the test's folder, and its stub."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from saip.common.netguard import NetworkMode
from saip.knowledge.config import KnowledgeSettings
from saip.knowledge.server import Running, lifespan
from saip.v1 import knowledge_pb2, knowledge_pb2_grpc


def knowledge_settings(home: Path, nats_url: str, **overrides: Any) -> KnowledgeSettings:
    return KnowledgeSettings.load(home=home, nats_url=nats_url, knowledge_port=0, knowledge_metrics_port=0, **overrides)


@asynccontextmanager
async def running_knowledge(
    settings: KnowledgeSettings, *, url_mode: NetworkMode = NetworkMode.STRICT
) -> AsyncIterator[Running]:
    async with lifespan(settings, registry=CollectorRegistry(), url_mode=url_mode) as running:
        yield running


@asynccontextmanager
async def knowledge_stub(port: int) -> AsyncIterator[knowledge_pb2_grpc.KnowledgeServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield knowledge_pb2_grpc.KnowledgeServiceStub(channel)  # type: ignore[no-untyped-call]


async def ingest(
    stub: knowledge_pb2_grpc.KnowledgeServiceStub, **source: str
) -> tuple[knowledge_pb2.IngestedDocument, list[knowledge_pb2.IngestProgress]]:
    """Run one ingest to its end; returns the result and the progress reported on the way."""
    steps: list[knowledge_pb2.IngestProgress] = []
    done = None
    async for event in stub.IngestDocument(knowledge_pb2.IngestDocumentRequest(**source)):
        if event.HasField("progress"):
            steps.append(event.progress)
        else:
            done = event.done
    assert done is not None, "the ingest stream ended without its result"
    return done, steps


async def refusal(stub: knowledge_pb2_grpc.KnowledgeServiceStub, **source: str) -> grpc.aio.AioRpcError:
    try:
        await ingest(stub, **source)
    except grpc.aio.AioRpcError as exc:
        return exc
    raise AssertionError(f"the ingest of {source} was not refused")
