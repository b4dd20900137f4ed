"""What saip_monitor_system and saip_monitor_logs_tail read, straight from NATS: the processes' heartbeats
(saip-system), JetStream's own accounting (usage, streams, consumers and their lag), the services' health as the
gateway sees it, the vector store as the knowledge service reports it, and the services' log lines (SAIP_LOGS),
all written by saip.common.telemetry in every process."""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args

import anyio
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import BucketNotFoundError, NotFoundError

from saip.common import bus, names, telemetry
from saip.common.masking import Masker
from saip.common.words import when
from saip.gateway.areas.knowledge.client import KnowledgeClient
from saip.gateway.clients import ServiceChannel
from saip.gateway.errors import ServiceRefused, ServiceUnavailable
from saip.v1 import common_pb2

logger = logging.getLogger(__name__)

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LEVELS: tuple[str, ...] = get_args(LogLevel)
# One tail reads at most this many messages of SAIP_LOGS (the stream keeps 2000 a service, each one line or a batch)
# and looks at the newest this many lines of them.
SCAN = 20_000
READ_WITHIN = 10.0


class System:
    def __init__(
        self,
        jetstream: Callable[[], JetStreamContext],
        health: Callable[[], Awaitable[dict[str, str]]],
        channel: Callable[[str], ServiceChannel | None],
    ) -> None:
        self._jetstream = jetstream
        self._health = health
        self._channel = channel

    async def snapshot(self) -> dict[str, Any]:
        js = self._jetstream()
        health = {"gateway": "ok", **await self._health()}  # the gateway answering this is healthy
        processes = await self._heartbeats(js)
        services = []
        for service in sorted(set(health) - {"nats"} | {beat["service"] for beat in processes}):
            replicas = [beat for beat in processes if beat["service"] == service]
            services.append(
                {
                    "service": service,
                    "health": health.get(service, "ok" if replicas else "unknown"),
                    "replicas": replicas,
                }
            )
        return {
            "services": services,
            "nats": await self._nats(js, health.get("nats", "unknown")),
            "vectorStore": await self._vector_store(),
        }

    async def _heartbeats(self, js: JetStreamContext) -> list[dict[str, Any]]:
        try:
            kv = await js.key_value(names.SYSTEM_BUCKET)
            keys = await bus.kv_keys(kv)
        except BucketNotFoundError:
            return []
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        beats = []
        for key in keys:
            try:
                entry = await kv.get(key)
            except NotFoundError:
                continue  # expired between the listing and the read
            beats.append(heartbeat(common_pb2.ServiceHeartbeat.FromString(entry.value or b"")))
        return beats

    async def _nats(self, js: JetStreamContext, health: str) -> dict[str, Any]:
        try:
            account = await js.account_info()
            streams = await js.streams_info()
            consumers = [c for stream in streams for c in await js.consumers_info(str(stream.config.name))]
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        return {
            "health": health,
            "jetstream": {
                "memoryBytes": account.memory,
                "storageBytes": account.storage,
                "streams": account.streams,
                "consumers": account.consumers,
            },
            "streams": [
                {
                    "name": stream.config.name,
                    "messages": stream.state.messages,
                    "bytes": stream.state.bytes,
                    "consumers": stream.state.consumer_count,
                    "lastSeq": stream.state.last_seq,
                }
                for stream in streams
            ],
            "consumers": [
                {
                    "stream": consumer.stream_name,
                    "name": consumer.name,
                    "pending": consumer.num_pending or 0,
                    "ackPending": consumer.num_ack_pending or 0,
                    "redelivered": consumer.num_redelivered or 0,
                }
                for consumer in consumers
                if consumer.config.durable_name  # the ordered consumers of watches come and go
            ],
        }

    async def _vector_store(self) -> dict[str, Any]:
        channel = self._channel("knowledge")
        if channel is None or not channel.configured:
            return {"status": "not configured", "detail": "knowledge.addr is unset"}
        try:
            reply = await KnowledgeClient(channel).status()
        except (ServiceUnavailable, ServiceRefused) as exc:
            return {"status": "unreachable", "detail": str(exc)}
        return {"status": "ok", "store": reply.vector_store, "encoder": reply.encoder, "chunks": reply.chunks}

    async def logs(self, service: str | None, level: str, text: str | None, limit: int) -> list[dict[str, Any]]:
        """The last `limit` lines at `level` or above (of one service, or of all), containing `text`, oldest first."""
        js = self._jetstream()
        try:
            info = await js.stream_info(names.LOGS_STREAM, subjects_filter=names.LOGS_SUBJECTS)
        except NotFoundError:
            return []
        except (NatsError, TimeoutError) as exc:
            raise ServiceUnavailable("nats", type(exc).__name__) from None
        if not info.state.messages:
            return []
        writing = sorted(subject.removeprefix(names.LOGS_PREFIX) for subject in info.state.subjects or {})
        if service is not None and service not in writing:
            raise ServiceRefused(
                f"No log lines of '{service}': no service of that name writes to the log stream. The services that "
                f"do: {', '.join(writing)}; leave the service out for all of them."
            )
        start = max(info.state.first_seq, info.state.last_seq - SCAN + 1)
        subject = names.LOGS_PREFIX + service if service else names.LOGS_SUBJECTS
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=30.0,
        )
        scanned: deque[bytes] = deque(maxlen=SCAN)
        subscription = await js.pull_subscribe(subject, stream=names.LOGS_STREAM, config=config)
        try:
            with anyio.move_on_after(READ_WITHIN):
                while True:
                    try:
                        batch = await subscription.fetch(500, timeout=1.0)
                    except NatsTimeout:
                        break  # nothing more for this subject
                    for message in batch:
                        scanned.extend(telemetry.lines_of(message.data))
                    if batch[-1].metadata.num_pending == 0:
                        break
        finally:
            await subscription.unsubscribe()
        floor = LEVELS.index(level)
        needle = text.casefold() if text else None
        kept: deque[dict[str, Any]] = deque(maxlen=limit)
        masker = Masker()
        for data in scanned:
            line = _line(data, floor, needle, masker)
            if line is not None:
                kept.append(line)
        return list(kept)


def _line(data: bytes, floor: int, needle: str | None, masker: Masker) -> dict[str, Any] | None:
    text = data.decode(errors="replace")
    if needle is not None and needle not in text.casefold():
        return None
    try:
        line = json.loads(text)
    except ValueError:
        return None
    if not isinstance(line, dict):
        return None
    level = line.get("level")
    if level in LEVELS and LEVELS.index(level) < floor:
        return None
    masked = masker.value(line)
    return masked if isinstance(masked, dict) else None


def heartbeat(beat: common_pb2.ServiceHeartbeat) -> dict[str, Any]:
    return {
        "service": beat.service,
        "replica": beat.replica,
        "version": beat.version,
        "startedAt": when(beat.started_at),
        "uptimeSeconds": round(max(0.0, time.time() - beat.started_at.ToNanoseconds() / 1e9), 1),
        "cpuSeconds": round(beat.cpu_seconds, 2),
        "memoryBytes": beat.rss_bytes,
        "openFiles": beat.open_fds,
        "openConnections": beat.open_connections,
        "threads": beat.threads,
        "restarts": beat.restarts,
        "lastBeat": when(beat.at),
    }
