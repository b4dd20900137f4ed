"""The recent traces: the ended spans every service publishes (batches of JSON rows on saip.traces.<service>, see
saip.common.tracing's `encode`), grouped by trace and kept bounded in memory, for saip_monitor_traces and
saip_monitor_trace_get.

Bounds: at most `capacity` traces (audit.traces-max) and none older than `max_age` seconds (audit.traces-max-age-
minutes) since its last span arrived; the trace touched longest ago goes first. A trace keeps at most
`SPANS_PER_TRACE` spans (a runaway loop of calls cannot fill the memory through one trace); the rest are counted.
And the store keeps at most `SPANS_KEPT` spans in all, so its memory has a bound whatever the traces hold (about
0.65 KiB of the process's memory a span: 32.5 MiB for 50,000, 9.7 MiB for 2,000 traces of the load benchmark's 8
spans; docs/audit.md "Memory").

A trace's tool and outcome are what its spans say (`saip.tool`, `saip.outcome`: the gateway's gate span sets both),
the root's first, so a listing can be filtered by them. Every audit replica subscribes, so each keeps the same
traces; nothing of it is durable (the audit trail is the record, traces are for looking into latency).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any

from saip.common import tracing

SPANS_PER_TRACE = 500
SPANS_KEPT = 50_000  # spans in all, across the kept traces
TOOL = "saip.tool"
OUTCOME = "saip.outcome"


@dataclass(slots=True)
class Span:
    """One finished span, as the audit service keeps it (never changed once made: not frozen only because a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, 13 µs a span where this takes 1, and the
    audit service makes one of every span every service ends)."""

    trace_id: str
    span_id: str
    parent_id: str  # empty for a root
    name: str
    service: str
    kind: str
    start_ns: int
    end_ns: int
    error: bool = False
    status_message: str = ""
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def duration_ms(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e6


@dataclass
class Trace:
    """The spans of one trace kept so far."""

    trace_id: str
    spans: dict[str, Span] = field(default_factory=dict)
    dropped: int = 0
    touched: float = 0.0  # when its last span arrived (the store's clock)

    @property
    def roots(self) -> list[Span]:
        """The spans whose parent is not in the trace (the root, and any orphan whose parent never arrived)."""
        return sorted(
            (span for span in self.spans.values() if not span.parent_id or span.parent_id not in self.spans),
            key=lambda span: span.start_ns,
        )

    @property
    def root(self) -> Span:
        return self.roots[0]

    @property
    def complete(self) -> bool:
        return any(not span.parent_id for span in self.spans.values())

    @property
    def start_ns(self) -> int:
        return min(span.start_ns for span in self.spans.values())

    @property
    def duration_ms(self) -> float:
        return max(0, max(span.end_ns for span in self.spans.values()) - self.start_ns) / 1e6

    @property
    def services(self) -> list[str]:
        return sorted({span.service for span in self.spans.values()})

    @property
    def error(self) -> bool:
        return any(span.error for span in self.spans.values())

    def said(self, attribute: str) -> str:
        """The first value of `attribute` in tree order (the root's first), or empty."""
        for span, _ in self.tree():
            if attribute in span.attributes:
                return span.attributes[attribute]
        return ""

    @property
    def tool(self) -> str:
        return self.said(TOOL)

    @property
    def outcome(self) -> str:
        return self.said(OUTCOME)

    def tree(self) -> list[tuple[Span, int]]:
        """Every span with its depth, depth first: each followed by its children, in order of start."""
        children: dict[str, list[Span]] = {}
        for span in self.spans.values():
            children.setdefault(span.parent_id, []).append(span)
        ordered: list[tuple[Span, int]] = []
        pending = [(root, 0) for root in reversed(self.roots)]
        while pending:
            span, depth = pending.pop()
            ordered.append((span, depth))
            below = sorted(children.get(span.span_id, ()), key=lambda child: child.start_ns, reverse=True)
            pending.extend((child, depth + 1) for child in below)
        return ordered


class TraceStore:
    """The recent traces, bounded by count and age (see the module's docstring)."""

    def __init__(self, capacity: int, max_age: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.max_age = max_age
        self._clock = clock
        self._traces: OrderedDict[str, Trace] = OrderedDict()  # the trace touched longest ago first
        self._spans = 0  # across the kept traces

    def __len__(self) -> int:
        self._expire()
        return len(self._traces)

    def add(self, spans: Iterable[Span]) -> None:
        now = self._clock()
        for span in spans:
            trace = self._traces.get(span.trace_id)
            if trace is None:
                trace = self._traces[span.trace_id] = Trace(span.trace_id)
            if span.span_id in trace.spans:
                trace.spans[span.span_id] = span
            elif len(trace.spans) >= SPANS_PER_TRACE:
                trace.dropped += 1
            else:
                trace.spans[span.span_id] = span
                self._spans += 1
            trace.touched = now
            self._traces.move_to_end(span.trace_id)
        # The newest trace stays, however many spans it holds (at most SPANS_PER_TRACE, far below SPANS_KEPT).
        while len(self._traces) > self.capacity or (self._spans > SPANS_KEPT and len(self._traces) > 1):
            self._evict()
        self._expire()

    def _evict(self) -> None:
        _, trace = self._traces.popitem(last=False)
        self._spans -= len(trace.spans)

    def _expire(self) -> None:
        horizon = self._clock() - self.max_age
        while self._traces:
            oldest = next(iter(self._traces.values()))
            if oldest.touched >= horizon:
                return
            self._evict()

    def get(self, trace_id: str) -> Trace | None:
        self._expire()
        return self._traces.get(trace_id.lower())

    def recent(
        self, *, tool: str = "", outcome: str = "", min_duration_ms: float = 0.0, limit: int = 20
    ) -> list[Trace]:
        """The kept traces that match, newest start first (`tool`, `outcome` empty: any)."""
        self._expire()
        found = [
            trace
            for trace in self._traces.values()
            if (not tool or trace.tool == tool)
            and (not outcome or trace.outcome == outcome)
            and trace.duration_ms >= min_duration_ms
        ]
        found.sort(key=lambda trace: trace.start_ns, reverse=True)
        return found[:limit]


def _text(value: Any) -> str:
    """An attribute's value as the traces show it: booleans as `true`/`false`, a list as its items."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value)
    return str(value)


def decode(payload: bytes) -> list[Span]:
    """The spans of one published batch (a ValueError when it is not one)."""
    service, rows = tracing.decode(payload)
    service = intern(service)
    try:
        return [_span(row, service) for row in rows]
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"a span row of {service} is not [trace, span, parent, name, kind, ...]: {exc}") from exc


def _span(row: list[Any], service: str) -> Span:
    """One kept span. The text that repeats from span to span (the trace id, shared by every span of the trace across
    the services' batches; names, kinds, attribute keys and most values) is interned: JSON decodes a new string for
    each occurrence, and those copies were 40 % of a full store (measured: 13.6 MiB for 2,000 load-benchmark traces,
    8.6 interned). Span ids and status messages are left as they are: mostly unique, interning them only costs."""
    trace_id, span_id, parent_id, name, kind, start_ns, end_ns, error, status, attributes = row
    return Span(
        trace_id=intern(str(trace_id)),
        span_id=str(span_id),
        parent_id=str(parent_id),
        name=intern(str(name)),
        service=service,
        kind=intern(str(kind)),
        start_ns=int(start_ns),
        end_ns=int(end_ns),
        error=bool(error),
        status_message=str(status),
        # JSON's keys are text already, and so are most values
        attributes={
            intern(key): intern(value if type(value) is str else _text(value)) for key, value in attributes.items()
        },
    )
