"""The spans of saip's own, per service.

A span is an OpenTelemetry API span (`opentelemetry.trace.Span`: current in the context, read by `inject` and by
`trace.get_current_span`), but not the SDK's: the SDK's span, made current and ended into its batch processor, pays
for attribute validation, locks, the sampler and processor chain and `use_span`'s generator, and a `tools/call` makes
eight. `OwnSpan` keeps a name, two ids, a dict of attributes and two clocks (docs/BENCHMARKS.md, "Tracing on against
off"). It records no events: an exception ending a span sets its status (`<Type>: <message>`), which is what the
traces show.

A service's traces are open while its lifespan runs (`export.traced`), registered under its name: `tracer("tools")
.span(...)` anywhere in the tools service makes a span of it, and nothing at all when none is open (`tracing.enabled:
false`, or a unit test that opened no lifespan). They are per service, not process-global, because the embedded
tests run several services in one process and each span must say which service made it.

Sampling: `tracing.sample-ratio` keeps a share of the traces where they start (the trace id's low 64 bits against the
ratio, as the SDK's `TraceIdRatioBased` does); a span with a parent follows the parent's choice, so a call is traced
whole or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections import deque
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

QUEUE = 4096  # ended spans a service holds before export; past it the oldest are dropped
SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_UNSAMPLED = trace.TraceFlags(trace.TraceFlags.DEFAULT)
_NOTHING: contextlib.nullcontext[Span] = contextlib.nullcontext(INVALID_SPAN)
Attributes = Mapping[str, str | int | float | bool]
# Whom a span continues: the current span when None, else a context holding one, or a caller's span context (`remote`).
Parent = Context | SpanContext | None


class OwnSpan(Span):
    """A recording span of saip's own (see the module's docstring): what the traces show of it, and no more."""

    __slots__ = ("_to", "attributes", "context", "end_ns", "error", "kind", "name", "parent_id", "start_ns", "status")

    def __init__(
        self,
        to: OpenTraces,
        name: str,
        context: SpanContext,
        parent_id: int,
        kind: SpanKind,
        attributes: Attributes | None,
        start_ns: int,
    ) -> None:
        self._to = to
        self.name = name
        self.context = context
        self.parent_id = parent_id
        self.kind = kind
        self.attributes: dict[str, AttributeValue] = dict(attributes) if attributes else {}
        self.start_ns = start_ns
        self.end_ns = 0
        self.error = False
        self.status = ""

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return not self.end_ns

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if not self.end_ns:
            self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        if not self.end_ns:
            self.attributes.update(attributes)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        code, text = (status.status_code, status.description) if isinstance(status, Status) else (status, description)
        if not self.end_ns and code is not StatusCode.UNSET:
            self.error, self.status = code is StatusCode.ERROR, text or ""

    def update_name(self, name: str) -> None:
        self.name = name

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        """Events are not kept: a span's status says how it ended, its attributes what it learned."""

    def add_link(self, context: SpanContext, attributes: Any = None) -> None:
        """Links are not kept: one call is one trace, each span with one parent."""

    def record_exception(self, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        """Not kept as an event: the exception that ends a span sets its status instead."""

    def end(self, end_time: int | None = None) -> None:
        if not self.end_ns:
            self.end_ns = end_time or time.time_ns()
            self._to.add(self)


class _Current:
    """A span made current around a block, and ended after it: what the SDK's `use_span` does, as a plain class."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> Span:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        otel_context.detach(self._token)
        # As the SDK does: an Exception marks the span; a cancellation (a BaseException) ends it as it stands.
        if isinstance(exc, Exception):
            self._span.set_status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
        self._span.end()


class OpenTraces:
    """The traces of one service while its lifespan runs: how it samples, and the spans ended since the last batch."""

    def __init__(self, service: str, sample_ratio: float, loop: asyncio.AbstractEventLoop) -> None:
        self.service = service
        self.bound = TraceIdRatioBased.get_bound_for_rate(sample_ratio)  # the SDK's rule, without its sampler call
        self.ended: deque[OwnSpan] = deque(maxlen=QUEUE)
        # Set by the first span into an empty queue: an idle service's export sleeps until then, rather than wake
        # every DELAY_MS for nothing (each wake-up is an epoll round and a context switch on a busy machine).
        self.arrived = asyncio.Event()
        self._loop, self._thread = loop, threading.get_ident()

    def add(self, span: OwnSpan) -> None:
        first = not self.ended
        self.ended.append(span)
        if first:
            if threading.get_ident() == self._thread:
                self.arrived.set()
            else:  # a span ended in a worker thread: the event belongs to the loop
                with contextlib.suppress(RuntimeError):  # the loop closed on the way out: the span is lost with it
                    self._loop.call_soon_threadsafe(self.arrived.set)

    def start(self, name: str, kind: SpanKind, attributes: Attributes | None, parent: Parent, start_ns: int) -> Span:
        above = parent if isinstance(parent, SpanContext) else trace.get_current_span(parent).get_span_context()
        span_id = random.getrandbits(64) or 1
        if above.is_valid:
            trace_id, parent_id, sampled = above.trace_id, above.span_id, above.trace_flags.sampled
        else:
            trace_id, parent_id = random.getrandbits(128) or 1, 0
            sampled = (trace_id & TraceIdRatioBased.TRACE_ID_LIMIT) < self.bound
        if not sampled:  # current all the same, so the services the call reaches follow the choice
            return NonRecordingSpan(SpanContext(trace_id, span_id, False, _UNSAMPLED))
        context = SpanContext(trace_id, span_id, False, SAMPLED)
        return OwnSpan(self, name, context, parent_id, kind, attributes, start_ns)


# The traces of each service opened in this process; the last one opened wins (two gateways in one test).
OPENED: dict[str, list[OpenTraces]] = {}


class Tracer:
    """The spans of one service: made while its lifespan has its traces open, nothing otherwise."""

    def __init__(self, service: str) -> None:
        self.service = service

    def opened(self) -> OpenTraces | None:
        """The service's traces, while its lifespan has them open (the last one opened, with two in one process)."""
        stack = OPENED.get(self.service)
        return stack[-1] if stack else None

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes | None = None,
        parent: Parent = None,
    ) -> contextlib.AbstractContextManager[Span]:
        """A span around a block, current inside it (its children and `inject` see it); an exception escaping the
        block marks it as an error."""
        opened = self.opened()
        if opened is None:
            return _NOTHING
        return _Current(opened.start(name, kind, attributes, parent, time.time_ns()))

    def record(
        self,
        name: str,
        started_ns: int,
        *,
        parent: Parent = None,
        attributes: Attributes | None = None,
    ) -> None:
        """A span of work already done, from `started_ns` (time.time_ns) to now: what a batch step (the audit
        collector's chaining) says of each record it handled."""
        opened = self.opened()
        if opened is not None:
            opened.start(name, SpanKind.INTERNAL, attributes, parent, started_ns).end()


_tracers: dict[str, Tracer] = {}


def tracer(service: str) -> Tracer:
    """The spans of `service` (the name its settings class has)."""
    found = _tracers.get(service)
    if found is None:
        found = _tracers[service] = Tracer(service)
    return found


def current() -> Span:
    """The span now current (a non-recording one when there is none): to add what the call learned on its way."""
    return trace.get_current_span()
