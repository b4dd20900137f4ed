"""The shipyard's outbound side: the tools service (its authored tools and exposed upstream members) and the
knowledge service over gRPC (what ships), the saip-shipyard bucket
(records with revisions) and the saip-bundles object store (one archive a version). Every call is bounded by a
deadline; the libraries' failures become the service's own errors."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from nats.js import JetStreamContext
from nats.js.api import ObjectMeta, ObjectStoreConfig, StorageType
from nats.js.errors import (
    BucketNotFoundError,
    InvalidKeyError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
    ObjectNotFoundError,
)
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from saip.common import bus, names, tracing
from saip.common.nats_failures import answered
from saip.shipyard.errors import Conflict, InvalidProposal, RuleRefused, StoreUnavailable
from saip.v1 import knowledge_pb2, knowledge_pb2_grpc, tools_pb2, tools_pb2_grpc, upstream_pb2, upstream_pb2_grpc

BUNDLES_OBJECT_STORE = names.BUNDLES_OBJECT_STORE
SHIPYARD_BUCKET = names.SHIPYARD_BUCKET
CALL_WITHIN = 10.0
SNAPSHOT_WITHIN = 300.0  # a snapshot of a large collection takes a while to write and to stream
NATS_WITHIN = 10.0
ARCHIVE_WITHIN = 120.0  # a bundle is many chunks of the object store
_T = TypeVar("_T")


class GrpcSources:
    """The tools and knowledge services, each reached when its address is configured."""

    def __init__(self, tools_addr: str | None, knowledge_addr: str | None) -> None:
        self._channels: list[grpc.aio.Channel] = []
        tools = self._channel(tools_addr)
        knowledge = self._channel(knowledge_addr)
        self._tools = _stub(tools_pb2_grpc.ToolsServiceStub, tools)
        # The upstream registry and exposure live in the tools service, on its address.
        self._upstream = _stub(upstream_pb2_grpc.UpstreamServiceStub, tools)
        self._knowledge = _stub(knowledge_pb2_grpc.KnowledgeServiceStub, knowledge)

    def _channel(self, address: str | None) -> grpc.aio.Channel | None:
        if not address:
            return None
        channel = tracing.channel("shipyard", address)
        self._channels.append(channel)
        return channel

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()

    async def authored_tools(self) -> list[tools_pb2.ToolSummary]:
        if self._tools is None:
            return []
        reply = await _call("tools", self._tools.ListTools(tools_pb2.ListToolsRequest(), timeout=CALL_WITHIN))
        return list(reply.tools)

    async def authored(self, name: str) -> tools_pb2.ToolDetail | None:
        if self._tools is None:
            return None
        detail: tools_pb2.ToolDetail | None = await _call(
            "tools", self._tools.GetTool(tools_pb2.GetToolRequest(name=name), timeout=CALL_WITHIN), missing=None
        )
        return detail

    async def knowledge_tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        if self._knowledge is None:
            return []
        request = knowledge_pb2.GetKnowledgeStatusRequest()
        reply = await _call("knowledge", self._knowledge.GetStatus(request, timeout=CALL_WITHIN))
        return list(reply.tools)

    async def knowledge(self, name: str) -> knowledge_pb2.KnowledgeToolDefinition | None:
        if self._knowledge is None:
            return None
        request = knowledge_pb2.DescribeKnowledgeToolRequest(name=name)
        definition: knowledge_pb2.KnowledgeToolDefinition | None = await _call(
            "knowledge", self._knowledge.DescribeTool(request, timeout=CALL_WITHIN), missing=None
        )
        return definition

    async def exposed_tools(self) -> list[upstream_pb2.ExposedTool]:
        if self._upstream is None:
            return []
        request = upstream_pb2.GetCompositionRequest()
        view = await _call("tools", self._upstream.GetComposition(request, timeout=CALL_WITHIN))
        return list(view.tools)

    async def upstream_server(self, server_id: str) -> upstream_pb2.Server | None:
        if self._upstream is None:
            return None
        reply = await _call("tools", self._upstream.ListServers(upstream_pb2.ListServersRequest(), timeout=CALL_WITHIN))
        return next((status.server for status in reply.servers if status.server.id == server_id), None)

    async def snapshot(self, name: str, target: Path) -> knowledge_pb2.KnowledgeToolDefinition:
        if self._knowledge is None:
            raise RuleRefused("the knowledge service is not configured (knowledge.addr); its tools cannot ship")
        request = knowledge_pb2.DescribeKnowledgeToolRequest(name=name)
        definition: knowledge_pb2.KnowledgeToolDefinition | None = None
        try:
            with target.open("wb") as archive:
                async for piece in self._knowledge.SnapshotTool(request, timeout=SNAPSHOT_WITHIN):
                    if piece.HasField("definition"):
                        definition = piece.definition
                    else:
                        archive.write(piece.data)
        except grpc.aio.AioRpcError as exc:
            raise _error("knowledge", exc) from None
        if definition is None:
            raise StoreUnavailable(f"the knowledge service sent no definition with the snapshot of '{name}'; retry")
        return definition


def _stub(factory: Callable[[grpc.aio.Channel], Any], channel: grpc.aio.Channel | None) -> Any:
    return factory(channel) if channel is not None else None


async def _call(service: str, call: Any, **missing: Any) -> Any:
    """Await one RPC; NOT_FOUND is `missing["missing"]` when given, every other failure a service error."""
    try:
        return await call
    except grpc.aio.AioRpcError as exc:
        if "missing" in missing and exc.code() == grpc.StatusCode.NOT_FOUND:
            return missing["missing"]
        raise _error(service, exc) from None


def _error(service: str, exc: grpc.aio.AioRpcError) -> Exception:
    if exc.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
        return RuleRefused(exc.details() or f"the {service} service refused")
    return StoreUnavailable(
        f"the {service} service did not answer ({exc.code().name}: {exc.details()}); try again shortly"
    )


async def _nats(operation: Any, *, within: float = NATS_WITHIN) -> Any:
    """Await one NATS operation (`saip.common.nats_failures`): only NATS not answering is StoreUnavailable (a key the
    library refuses is the caller's input, never an outage)."""
    try:
        return await answered(operation, StoreUnavailable, within=within)
    except InvalidKeyError:
        raise InvalidProposal(
            "no record can be kept under that name: a NATS key holds only ASCII letters, digits and '-/_=.'"
        ) from None


class KvRecords:
    """Records by key in the saip-shipyard bucket; a write naming a revision refuses one that moved on."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, key: str) -> tuple[bytes, int] | None:
        try:
            entry = await _nats(self._kv.get(key))
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if entry.revision is None:
            return None
        return entry.value or b"", int(entry.revision)

    async def put(self, key: str, value: bytes, revision: int | None = None) -> int:
        try:
            if revision is None:
                return int(await _nats(self._kv.put(key, value)))
            if revision == 0:
                return int(await _nats(self._kv.create(key, value)))
            return int(await _nats(self._kv.update(key, value, last=revision)))
        except KeyWrongLastSequenceError:
            raise Conflict(f"'{key}' changed since it was read; read it again and retry") from None

    async def delete(self, key: str) -> None:
        with contextlib.suppress(KeyNotFoundError, KeyDeletedError):
            await _nats(self._kv.delete(key))

    async def keys(self, prefix: str) -> list[str]:
        found: list[str] = await _nats(bus.kv_keys(self._kv, prefix))
        return found


class ObjectArchives:
    """Bundle archives in the saip-bundles object store."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    @classmethod
    async def open(cls, js: JetStreamContext) -> ObjectArchives:
        try:
            store = await _nats(js.object_store(BUNDLES_OBJECT_STORE))
        except BucketNotFoundError:
            config = ObjectStoreConfig(description="saip shipyard: bundles, one a version", storage=StorageType.FILE)
            store = await _nats(js.create_object_store(BUNDLES_OBJECT_STORE, config))
        return cls(store)

    async def put(self, name: str, data: bytes) -> None:
        meta = ObjectMeta(name=name, description="a shipped server's bundle")
        await _nats(self._store.put(name, data, meta=meta), within=ARCHIVE_WITHIN)

    async def get(self, name: str) -> bytes:
        # Into a buffer: without one the library joins the chunks by concatenation, quadratic in the object's size.
        buffer = io.BytesIO()
        try:
            await _nats(self._store.get(name, writeinto=buffer), within=ARCHIVE_WITHIN)
        except (ObjectNotFoundError, NotFoundError):
            raise RuleRefused(
                f"the bundle {name} is missing from {BUNDLES_OBJECT_STORE}; ship the server again"
            ) from None
        return buffer.getvalue()

    async def delete(self, name: str) -> None:
        with contextlib.suppress(ObjectNotFoundError, NotFoundError):
            await _nats(self._store.delete(name))
