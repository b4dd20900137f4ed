"""The knowledge service's NATS side and its fetch: the saip-knowledge bucket (a catalog snapshot kept current by a
watch), the saip-documents object store, and the guarded fetch for ingest by URL. Each turns its library's failures
into the service's own errors. The vector index is `qdrant`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from google.protobuf.message import DecodeError, Message
from nats.js import JetStreamContext
from nats.js.api import ObjectMeta, ObjectStoreConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyWrongLastSequenceError, NotFoundError, ObjectNotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from saip.common import jetstream, names
from saip.common.bucket_copy import BucketCopy
from saip.common.nats_failures import answered
from saip.common.netguard import Binding, GuardBlocked, NetPolicy, NetworkMode, guarded_fetch
from saip.common.risk import SANDBOX_GUARD_BLOCKED, WARN, RiskPublisher
from saip.knowledge.errors import AlreadyExists, NotFound, Refused, StoreUnavailable
from saip.knowledge.ports import Fetched
from saip.v1 import knowledge_pb2

logger = logging.getLogger(__name__)

_KINDS: dict[str, type[Message]] = {
    "document": knowledge_pb2.Document,
    "pipeline": knowledge_pb2.Pipeline,
    "tool": knowledge_pb2.KnowledgeTool,
}


class KvCatalog(BucketCopy[Message]):
    """The saip-knowledge bucket (keys document.<id>, pipeline.<id>, tool.<name>) and a copy of it.

    Reads come from the copy, which only the bucket's watch changes (`saip.common.bucket_copy`); every write waits
    until the watch has shown it, so a caller reads its own writes and every replica converges on the same state. The
    service keeps the watch alive (`saip.common.watch.keep_alive(catalog.watch, ...)`).
    """

    def __init__(self, js: JetStreamContext, kv: KeyValue) -> None:
        super().__init__(kv, js, names.KNOWLEDGE_BUCKET, StoreUnavailable)

    @classmethod
    async def open(cls, js: JetStreamContext) -> KvCatalog:
        kv = await answered(jetstream.ensure_kv(js, names.KNOWLEDGE_BUCKET, history=5), StoreUnavailable)
        return cls(js, kv)

    def value(self, entry: KeyValue.Entry) -> Message | None:
        kind = entry.key.partition(".")[0]
        if kind not in _KINDS or not entry.value:
            return None
        try:
            return _KINDS[kind].FromString(entry.value)
        except DecodeError:
            logger.error("unreadable knowledge record skipped", extra={"key": entry.key})
            return None

    # reads --------------------------------------------------------------------------------------------------------

    def _all(self, kind: str) -> list[Any]:
        return [record for key, record in self._values.items() if key.startswith(f"{kind}.")]

    def documents(self) -> list[knowledge_pb2.Document]:
        return self._all("document")

    def document(self, document_id: str) -> knowledge_pb2.Document | None:
        return self._values.get(f"document.{document_id}")  # type: ignore[return-value]

    def pipelines(self) -> list[knowledge_pb2.Pipeline]:
        return self._all("pipeline")

    def pipeline(self, pipeline_id: str) -> knowledge_pb2.Pipeline | None:
        return self._values.get(f"pipeline.{pipeline_id}")  # type: ignore[return-value]

    def tools(self) -> list[knowledge_pb2.KnowledgeTool]:
        return self._all("tool")

    def tool(self, name: str) -> knowledge_pb2.KnowledgeTool | None:
        return self._values.get(f"tool.{name}")  # type: ignore[return-value]

    # writes -------------------------------------------------------------------------------------------------------

    async def _create(self, key: str, message: Message, taken: str) -> None:
        try:
            revision = await answered(self._kv.create(key, message.SerializeToString()), StoreUnavailable)
        except KeyWrongLastSequenceError:
            raise AlreadyExists(taken) from None
        await self.caught_up(revision)

    async def _put(self, key: str, message: Message) -> None:
        await self.caught_up(await answered(self._kv.put(key, message.SerializeToString()), StoreUnavailable))

    async def _delete(self, key: str) -> None:
        await answered(self._kv.delete(key), StoreUnavailable)
        await self.current()  # a delete does not return its revision; the stream's last sequence covers it

    async def create_document(self, document: knowledge_pb2.Document) -> None:
        await self._create(f"document.{document.id}", document, f"a document named '{document.name}' exists")

    async def delete_document(self, document_id: str) -> None:
        await self._delete(f"document.{document_id}")

    async def put_pipeline(self, pipeline: knowledge_pb2.Pipeline, *, create: bool) -> None:
        key = f"pipeline.{pipeline.id}"
        if create:
            await self._create(key, pipeline, f"a pipeline named '{pipeline.name}' exists")
        else:
            await self._put(key, pipeline)

    async def delete_pipeline(self, pipeline_id: str) -> None:
        await self._delete(f"pipeline.{pipeline_id}")

    async def create_tool(self, tool: knowledge_pb2.KnowledgeTool) -> None:
        await self._create(f"tool.{tool.name}", tool, f"the knowledge tool '{tool.name}' is already published")

    async def delete_tool(self, name: str) -> None:
        await self._delete(f"tool.{name}")


class ObjectOriginals:
    """Each document's original bytes in the saip-documents object store, named by ingest id."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    @classmethod
    async def open(cls, js: JetStreamContext) -> ObjectOriginals:
        try:
            store = await answered(js.object_store(names.DOCUMENTS_OBJECT_STORE), StoreUnavailable)
        except BucketNotFoundError:
            store = await answered(
                js.create_object_store(
                    names.DOCUMENTS_OBJECT_STORE,
                    ObjectStoreConfig(description="saip knowledge: original documents", storage=StorageType.FILE),
                ),
                StoreUnavailable,
            )
        return cls(store)

    async def put(self, key: str, data: bytes, *, description: str) -> None:
        await answered(self._store.put(key, data, meta=ObjectMeta(name=key, description=description)), StoreUnavailable)

    async def get(self, key: str) -> bytes:
        try:
            result = await answered(self._store.get(key), StoreUnavailable)
        except (ObjectNotFoundError, NotFoundError):
            raise NotFound(f"the original of ingest {key} is missing from {names.DOCUMENTS_OBJECT_STORE}") from None
        return bytes(result.data or b"")

    async def delete(self, key: str) -> None:
        with contextlib.suppress(ObjectNotFoundError, NotFoundError):  # already gone is what we want
            await answered(self._store.delete(key), StoreUnavailable)


class GuardedFetcher:
    """Ingest by URL through the shared network guard (strict: public addresses only); a refusal is also a
    sandbox-guard-blocked risk event."""

    def __init__(self, risk: RiskPublisher | None, mode: NetworkMode = NetworkMode.STRICT) -> None:
        self._risk = risk
        self._mode = mode

    async def fetch(self, url: str, max_bytes: int, secrets: Sequence[Binding] = ()) -> Fetched:
        try:
            response = await guarded_fetch(url, policy=NetPolicy(self._mode, max_body=max_bytes), secrets=secrets)
        except GuardBlocked as exc:
            if self._risk is not None:
                await self._risk.publish(
                    SANDBOX_GUARD_BLOCKED,
                    WARN,
                    f"knowledge ingest by URL refused: {exc}",
                    reason=exc.reason.value,
                    subject=url[:500],
                )
            raise Refused(
                f"the URL was refused by the network guard: {exc} Ingest a file or the text instead."
            ) from None
        if response.status >= 400:
            raise NotFound(f"'{url}' answered HTTP {response.status}; check the URL")
        if response.status >= 300:
            raise Refused(f"'{url}' answered HTTP {response.status} without a usable redirect; give the final URL")
        return Fetched(response.body, response.headers.get("content-type", ""), response.url)
