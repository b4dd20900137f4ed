"""The recent traces: the ended spans every service publishes (batches of JSON rows on saip.traces.<service>, see
saip.common.tracing's `encode`), grouped by trace and kept bounded in memory, for saip_monitor_traces and
saip_monitor_trace_get.

Bounds: at most `capacity` traces (audit.traces-max) and none older than `max_age` seconds (audit.traces-max-age-
minutes) since its last span arrived; the trace touched longest ago goes first. A trace keeps at most
`SPANS_PER_TRACE` spans (a runaway loop of calls cannot fill the memory through one trace); the rest are counted.
And the store keeps at most `SPANS_KEPT` spans in all, so its memory has a bound whatever the traces hold.

A kept trace is bytes, not objects: each arrival of its spans (one service's batch holds a few spans of each trace)
is one `marshal` string of their fields, and a `Trace` with `Span` objects is made from them only when it is read
(a listing makes only the traces it returns), which takes well under half the memory of the same spans kept as
objects (docs/audit.md, "Memory"). The listing's filters read what each kept trace keeps beside its bytes: its start
and end, and its tool and outcome once asked.

A trace's tool and outcome are what its spans say (`saip.tool`, `saip.outcome`: the gateway's gate span sets both),
the root's first, so a listing can be filtered by them. Every audit replica subscribes, so each keeps the same
traces; nothing of it is durable (the audit trail is the record, traces are for looking into latency).
"""

from __future__ import annotations

import marshal
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
    """One finished span, as a batch brings it and a read shows it (never changed once made: not frozen only because a
    frozen dataclass's `__init__` sets each field through `object.__setattr__`, many times the cost of this one's, and
    the audit service makes one of every span every service ends)."""

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
    """One kept trace as a read shows it: its spans so far, made from what the store keeps of them."""

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


@dataclass(slots=True)
class _Kept:
    """One trace as the store keeps it: the `marshal` strings of its spans' fields, one per arrival, oldest first,
    with what the listing filters on. A span sent again (an exporter's retry: the same span) is kept again, counted
    again, and read once."""

    trace_id: str
    arrivals: list[bytes] = field(default_factory=list)
    spans: int = 0  # stored, copies of a span sent again included: what the bounds count
    dropped: int = 0
    touched: float = 0.0  # when its last span arrived (the store's clock)
    start_ns: int = 0
    end_ns: int = 0
    said: tuple[str, str] | None = None  # its tool and outcome, once asked, until another span arrives

    def add(self, spans: list[Span], now: float) -> int:
        """Keeps what the trace's bound lets in and counts the rest; the number of spans kept."""
        room = max(0, SPANS_PER_TRACE - self.spans)
        kept, self.dropped = spans[:room], self.dropped + max(0, len(spans) - room)
        if kept:
            # Each span's fields after its trace id, in `Span`'s order: `trace` makes the span again from them.
            fields = [
                (
                    span.span_id,
                    span.parent_id,
                    span.name,
                    span.service,
                    span.kind,
                    span.start_ns,
                    span.end_ns,
                    span.error,
                    span.status_message,
                    span.attributes,
                )
                for span in kept
            ]
            self.arrivals.append(marshal.dumps(fields))
            starts, ends = min(span.start_ns for span in kept), max(span.end_ns for span in kept)
            self.start_ns, self.end_ns = (
                (min(self.start_ns, starts), max(self.end_ns, ends)) if self.spans else (starts, ends)
            )
            self.spans += len(kept)
            self.said = None
        self.touched = now
        return len(kept)

    @property
    def duration_ms(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e6

    def says(self, tool: str, outcome: str) -> bool:
        """Whether its spans say `tool` and `outcome` (either any when empty), read once until another span arrives."""
        if not tool and not outcome:
            return True
        if self.said is None:
            trace = self.trace()
            self.said = (intern(trace.tool), intern(trace.outcome))  # a few names, kept by every trace asked
        said_tool, said_outcome = self.said
        return (not tool or said_tool == tool) and (not outcome or said_outcome == outcome)

    def trace(self) -> Trace:
        spans: dict[str, Span] = {}
        for arrival in self.arrivals:
            for fields in marshal.loads(arrival):
                spans[fields[0]] = Span(self.trace_id, *fields)
        return Trace(self.trace_id, spans, self.dropped, self.touched)


class TraceStore:
    """The recent traces, bounded by count and age (see the module's docstring)."""

    def __init__(self, capacity: int, max_age: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        self.max_age = max_age
        self._clock = clock
        self._traces: OrderedDict[str, _Kept] = OrderedDict()  # the trace touched longest ago first
        self._spans = 0  # across the kept traces

    def __len__(self) -> int:
        self._expire()
        return len(self._traces)

    def add(self, spans: Iterable[Span]) -> None:
        now = self._clock()
        # The spans by trace, the traces in the order of their last span in `spans`: the order they are touched in.
        arrived: dict[str, list[Span]] = {}
        for span in spans:
            group = arrived.pop(span.trace_id, None) or []
            group.append(span)
            arrived[span.trace_id] = group
        for trace_id, group in arrived.items():
            kept = self._traces.get(trace_id)
            if kept is None:
                kept = self._traces[trace_id] = _Kept(trace_id)
            self._spans += kept.add(group, now)
            self._traces.move_to_end(trace_id)
        # The newest trace stays, however many spans it holds (at most SPANS_PER_TRACE, far below SPANS_KEPT).
        while len(self._traces) > self.capacity or (self._spans > SPANS_KEPT and len(self._traces) > 1):
            self._evict()
        self._expire()

    def _evict(self) -> None:
        _, kept = self._traces.popitem(last=False)
        self._spans -= kept.spans

    def _expire(self) -> None:
        horizon = self._clock() - self.max_age
        while self._traces:
            oldest = next(iter(self._traces.values()))
            if oldest.touched >= horizon:
                return
            self._evict()

    def get(self, trace_id: str) -> Trace | None:
        self._expire()
        kept = self._traces.get(trace_id.lower())
        return kept.trace() if kept is not None else None

    def recent(
        self, *, tool: str = "", outcome: str = "", min_duration_ms: float = 0.0, limit: int = 20
    ) -> list[Trace]:
        """The kept traces that match, newest start first (`tool`, `outcome` empty: any)."""
        self._expire()
        found = [
            kept for kept in self._traces.values() if kept.duration_ms >= min_duration_ms and kept.says(tool, outcome)
        ]
        found.sort(key=lambda kept: kept.start_ns, reverse=True)
        return [kept.trace() for kept in found[:limit]]


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
    try:
        return [_span(row, service) for row in rows]
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"a span row of {service} is not [trace, span, parent, name, kind, ...]: {exc}") from exc


def _span(row: list[Any], service: str) -> Span:
    """One span of a batch, each field of the type it is kept as. Nothing is interned: the store keeps the fields as
    bytes, so of a batch's decoded text only each new trace's id outlives its arrival (as the store's key)."""
    trace_id, span_id, parent_id, name, kind, start_ns, end_ns, error, status, attributes = row
    return Span(
        trace_id=str(trace_id),
        span_id=str(span_id),
        parent_id=str(parent_id),
        name=str(name),
        service=service,
        kind=str(kind),
        start_ns=int(start_ns),
        end_ns=int(end_ns),
        error=bool(error),
        status_message=str(status),
        # JSON's keys are text already, and so are most values
        attributes={key: value if type(value) is str else _text(value) for key, value in attributes.items()},
    )
