"""The setup of a service's traces (`traced`), and their export, off the call path, without a thread.

An ended span is appended to its service's queue (a bounded deque, `spans.QUEUE` spans, the oldest dropped past it)
and nothing more. `DELAY_MS` after the first span into an empty queue (an idle service's export sleeps), a task on
the event loop takes the queue in slices of `BATCH` spans, encodes each slice in one C call (`encode`: JSON rows, a
fraction of the OTLP protobuf encoder's cost) and publishes it as one message on `saip.traces.<service>` (core NATS,
no ack), yielding to the loop between slices, so no thread holds the GIL beside the calls. The audit service keeps
the recent traces from there (`saip.audit.traces`, with `decode`). With `OTEL_EXPORTER_OTLP_ENDPOINT` set, each slice
is also handed, as the SDK's `ReadableSpan`s, to the SDK's batch processor and its OTLP/HTTP exporter (a trace
backend such as Tempo).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from saip.common import names, telemetry
from saip.common.settings import SaipSettings
from saip.common.tracing.spans import OPENED, QUEUE, SAMPLED, OpenTraces, OwnSpan

logger = logging.getLogger(__name__)

OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
BATCH = 64  # spans encoded into one message: one slice of the event loop's time (well under a millisecond)
DELAY_MS = 200  # how long an ended span may wait for its batch: traces show up within a fraction of a second
FORMAT = 1  # the version of the rows `encode` writes; `decode` refuses any other
_KINDS = {kind: kind.name.lower() for kind in SpanKind}  # as a row names them (an Enum's name is a property call)


def encode(service: str, spans: Sequence[OwnSpan]) -> bytes:
    """One message of `service`'s ended spans: a JSON object whose rows are `[trace id, span id, parent id (empty
    for a root), name, kind, start ns, end ns, error, status, attributes]`, ids in hex as OTLP shows them."""
    rows = [
        [
            f"{span.context.trace_id:032x}",
            f"{span.context.span_id:016x}",
            f"{span.parent_id:016x}" if span.parent_id else "",
            span.name,
            _KINDS[span.kind],
            span.start_ns,
            span.end_ns,
            span.error,
            span.status,
            span.attributes,
        ]
        for span in spans
    ]
    # An attribute JSON cannot carry (an enum, bytes) goes as its text rather than failing the whole batch.
    batch = {"format": FORMAT, "service": service, "spans": rows}
    return json.dumps(batch, separators=(",", ":"), default=str).encode()


def decode(payload: bytes) -> tuple[str, list[list[Any]]]:
    """The service and the rows of one message `encode` wrote (a ValueError when it is not one)."""
    batch = json.loads(payload)
    if not isinstance(batch, dict) or batch.get("format") != FORMAT or not isinstance(batch.get("spans"), list):
        raise ValueError(f"not a span batch of format {FORMAT}")
    return str(batch.get("service", "unknown")), batch["spans"]


class _Otlp:
    """The spans handed to a trace backend over OTLP/HTTP, when OTEL_EXPORTER_OTLP_ENDPOINT is set: each ended span
    as the SDK's ReadableSpan, into the SDK's batch processor (its thread encodes and posts them)."""

    def __init__(self, service: str, exporter: SpanExporter) -> None:
        self._resource = Resource.create({SERVICE_NAME: service, SERVICE_INSTANCE_ID: telemetry.replica()})
        self._scope = InstrumentationScope(f"saip.{service}")
        self._processor = BatchSpanProcessor(
            exporter, max_queue_size=QUEUE, max_export_batch_size=512, schedule_delay_millis=DELAY_MS
        )

    def hand(self, spans: Sequence[OwnSpan]) -> None:
        for span in spans:
            parent = SpanContext(span.context.trace_id, span.parent_id, False, SAMPLED) if span.parent_id else None
            status = Status(StatusCode.ERROR, span.status) if span.error else Status(StatusCode.UNSET)
            self._processor.on_end(
                ReadableSpan(
                    name=span.name,
                    context=span.context,
                    parent=parent,
                    resource=self._resource,
                    attributes=span.attributes,
                    kind=span.kind,
                    status=status,
                    start_time=span.start_ns,
                    end_time=span.end_ns,
                    instrumentation_scope=self._scope,
                )
            )

    def shutdown(self) -> None:
        self._processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated


async def _publish(opened: OpenTraces, nc: NatsClient, otlp: _Otlp | None) -> None:
    """The spans ended so far, published on saip.traces.<service> a slice at a time (and handed to OTLP)."""
    ended, subject = opened.ended, names.TRACES_PREFIX + opened.service
    while ended:
        spans = [ended.popleft() for _ in range(min(BATCH, len(ended)))]
        if otlp is not None:
            otlp.hand(spans)
        with contextlib.suppress(NatsError, OSError):  # a batch that cannot be sent is dropped: traces are recent
            await nc.publish(subject, encode(opened.service, spans))
        await asyncio.sleep(0)  # the calls waiting on the loop go before the next slice


async def _ship(opened: OpenTraces, nc: NatsClient, otlp: _Otlp | None) -> None:
    """DELAY_MS after the first span into an empty queue, the spans ended since; until cancelled."""
    while True:
        await opened.arrived.wait()
        await asyncio.sleep(DELAY_MS / 1000)
        opened.arrived.clear()  # before the queue is taken: a span ending after that sets it again
        await _publish(opened, nc, otlp)


@contextlib.asynccontextmanager
async def traced(settings: SaipSettings, nc: NatsClient) -> AsyncIterator[None]:
    """This service's traces for the lifespan: its spans made, and published over `nc` (and over OTLP when
    OTEL_EXPORTER_OTLP_ENDPOINT is set); on the way out every ended span is exported before NATS drains. With
    `tracing.enabled: false` nothing is set up and every span of the service is a no-op."""
    if not settings.tracing_enabled:
        yield
        return
    service = settings.service
    opened = OpenTraces(service, settings.tracing_sample_ratio, asyncio.get_running_loop())
    otlp = None
    if os.environ.get(OTLP_ENDPOINT):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The endpoint, headers and timeout come from the standard OTEL_EXPORTER_OTLP_* variables.
        otlp = _Otlp(service, OTLPSpanExporter())
        logger.info("traces exported over OTLP", extra={"endpoint": os.environ[OTLP_ENDPOINT]})
    shipping = asyncio.create_task(_ship(opened, nc, otlp), name=f"{service}-traces")
    OPENED.setdefault(service, []).append(opened)
    try:
        yield
    finally:
        OPENED[service].remove(opened)
        shipping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await shipping
        await _publish(opened, nc, otlp)  # what is still queued, before the connection drains
        if otlp is not None:  # the SDK's thread posts what it holds (bounded by the exporter's own timeout)
            await asyncio.to_thread(otlp.shutdown)
