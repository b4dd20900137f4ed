"""The trace store: its bounds (count, age, spans per trace), its filters, the span tree, and the decoding of what
the services publish (made by saip.common.tracing's spans and its export)."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, Status, StatusCode

from saip.audit import traces
from saip.audit.traces import Span, TraceStore
from saip.common import tracing
from tests.spans import ProbeSettings, Published


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def span(
    trace: str, span_id: str, parent: str = "", *, start: int = 0, end: int = 1_000_000, **attributes: str
) -> Span:
    return Span(
        trace_id=trace,
        span_id=span_id,
        parent_id=parent,
        name=f"span {span_id}",
        service="gateway",
        kind="internal",
        start_ns=start,
        end_ns=end,
        attributes=dict(attributes),
    )


def call(trace: str, *, tool: str, outcome: str, millis: int, start: int = 0) -> list[Span]:
    """What the gateway makes of one tools/call: the request, the gate's span with the tool and the outcome."""
    return [
        span(trace, "a", start=start, end=start + millis * 1_000_000),
        span(trace, "b", "a", start=start + 10, end=start + 20, **{"saip.tool": tool, "saip.outcome": outcome}),
    ]


def test_the_store_keeps_at_most_its_capacity_dropping_the_trace_touched_longest_ago() -> None:
    store = TraceStore(2, 60.0, clock=Clock())
    for trace in ("t1", "t2", "t3"):
        store.add([span(trace, "a")])

    assert len(store) == 2
    assert store.get("t1") is None
    assert store.get("t3") is not None


def test_a_span_arriving_for_a_kept_trace_keeps_it_the_longest() -> None:
    store = TraceStore(2, 60.0, clock=Clock())
    store.add([span("t1", "a")])
    store.add([span("t2", "a")])
    store.add([span("t1", "b", "a")])  # t1 touched again: t2 is now the one touched longest ago
    store.add([span("t3", "a")])

    assert store.get("t2") is None
    kept = store.get("t1")
    assert kept is not None
    assert set(kept.spans) == {"a", "b"}


def test_traces_older_than_the_age_limit_are_gone() -> None:
    clock = Clock()
    store = TraceStore(100, 60.0, clock=clock)
    store.add([span("old", "a")])
    clock.now += 30
    store.add([span("new", "a")])
    clock.now += 31  # old: 61 s since its last span; new: 31 s

    assert store.get("old") is None
    assert store.get("new") is not None
    assert len(store) == 1


def test_a_trace_keeps_at_most_its_span_bound_and_counts_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces, "SPANS_PER_TRACE", 3)
    store = TraceStore(10, 60.0, clock=Clock())
    store.add([span("t", str(index)) for index in range(5)])

    kept = store.get("t")
    assert kept is not None
    assert len(kept.spans) == 3
    assert kept.dropped == 2


def test_the_store_keeps_at_most_its_span_bound_in_all_dropping_the_traces_touched_longest_ago(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(traces, "SPANS_KEPT", 5)
    store = TraceStore(100, 60.0, clock=Clock())
    for name in ("t1", "t2", "t3"):
        store.add([span(name, "a"), span(name, "b", "a")])
    store.add([span("t3", "c", "a")])  # known spans again are no more spans

    assert (store.get("t1"), len(store)) == (None, 2)
    assert sum(len(trace.spans) for trace in store.recent()) == 5


def test_a_kept_span_reads_back_as_it_arrived_and_a_span_sent_again_reads_once() -> None:
    """The store keeps a trace's spans as bytes and makes them anew for each read: every field comes back as it was,
    and an exporter's retry of a span is one span to the reader."""
    trace = "0af7651916cd43dd8448eb211c80319c"
    root = Span(trace, "b7ad6b7169203331", "", "mcp tools/call", "gateway", "server", 10, 90, True, "boom", {"k": "v"})
    child = Span(trace, "00f067aa0ba902b7", root.span_id, "sandbox run", "tools", "internal", 20, 80)
    store = TraceStore(10, 60.0, clock=Clock())
    store.add([root])
    store.add([child, root])

    kept = store.get(trace)
    assert kept is not None
    assert kept.spans == {root.span_id: root, child.span_id: child}
    assert [span.span_id for span, _ in kept.tree()] == [root.span_id, child.span_id]
    assert (kept.duration_ms, kept.error, kept.services) == (pytest.approx(80e-6), True, ["gateway", "tools"])


def test_a_listing_filtered_by_tool_sees_a_span_that_arrived_after_it_was_asked() -> None:
    store = TraceStore(10, 60.0, clock=Clock())
    store.add([span("t", "a")])
    assert store.recent(tool="adder") == []

    store.add([span("t", "b", "a", **{"saip.tool": "adder", "saip.outcome": "ok"})])

    assert [trace.trace_id for trace in store.recent(tool="adder", outcome="ok")] == ["t"]


def test_the_listing_filters_by_tool_outcome_and_duration_newest_first() -> None:
    store = TraceStore(100, 60.0, clock=Clock())
    store.add(call("t1", tool="adder", outcome="ok", millis=5, start=1))
    store.add(call("t2", tool="adder", outcome="error", millis=50, start=2))
    store.add(call("t3", tool="wiki", outcome="ok", millis=500, start=3))

    assert [trace.trace_id for trace in store.recent()] == ["t3", "t2", "t1"]
    assert [trace.trace_id for trace in store.recent(tool="adder")] == ["t2", "t1"]
    assert [trace.trace_id for trace in store.recent(outcome="ok")] == ["t3", "t1"]
    assert [trace.trace_id for trace in store.recent(min_duration_ms=50)] == ["t3", "t2"]
    assert [trace.trace_id for trace in store.recent(tool="adder", outcome="ok")] == ["t1"]
    assert [trace.trace_id for trace in store.recent(limit=1)] == ["t3"]


def test_the_tree_is_depth_first_with_children_in_order_of_start() -> None:
    store = TraceStore(10, 60.0, clock=Clock())
    # Arriving out of order, as batches from several services do.
    store.add([span("t", "c2", "b", start=30), span("t", "d", "a", start=40), span("t", "c1", "b", start=20)])
    store.add([span("t", "b", "a", start=10), span("t", "a", start=0)])

    kept = store.get("t")
    assert kept is not None
    assert [(item.span_id, depth) for item, depth in kept.tree()] == [
        ("a", 0),
        ("b", 1),
        ("c1", 2),
        ("c2", 2),
        ("d", 1),
    ]
    assert kept.complete
    assert kept.root.span_id == "a"


def test_a_trace_whose_root_has_not_arrived_shows_its_orphans_as_roots() -> None:
    store = TraceStore(10, 60.0, clock=Clock())
    store.add([span("t", "c", "b", start=20), span("t", "b", "missing", start=10)])

    kept = store.get("t")
    assert kept is not None
    assert not kept.complete
    assert [(item.span_id, depth) for item, depth in kept.tree()] == [("b", 0), ("c", 1)]


def test_the_summary_reads_the_tool_and_outcome_from_the_spans_and_times_the_whole_trace() -> None:
    store = TraceStore(10, 60.0, clock=Clock())
    store.add(call("t", tool="adder", outcome="declined", millis=12, start=1_000))

    kept = store.get("t")
    assert kept is not None
    assert (kept.tool, kept.outcome) == ("adder", "declined")
    assert kept.duration_ms == pytest.approx(12.0)
    assert kept.services == ["gateway"]


async def test_decode_reads_what_the_services_publish() -> None:
    published = Published()
    async with tracing.traced(ProbeSettings.load(), published):  # type: ignore[arg-type]
        spans = tracing.tracer("probe")
        with spans.span("grpc CallServedTool", kind=SpanKind.SERVER) as outer:
            outer.set_attribute("saip.tool", "adder")
            with spans.span("sandbox run", attributes={"saip.runs": ["call", "test"]}) as inner:
                inner.set_attribute("saip.ok", False)
                inner.set_status(Status(StatusCode.ERROR, "boom"))

    decoded = [item for batch in published.batches for item in traces.decode(batch)]
    store = TraceStore(10, 60.0, clock=Clock())
    store.add(decoded)

    (kept,) = store.recent()
    assert kept.services == ["probe"]
    assert kept.tool == "adder"
    assert kept.error
    (root, _), (child, depth) = kept.tree()
    assert (root.name, root.kind, root.parent_id) == ("grpc CallServedTool", "server", "")
    assert (child.name, depth, child.attributes, child.status_message) == (
        "sandbox run",
        1,
        {"saip.runs": "call, test", "saip.ok": "false"},
        "boom",
    )
    assert len(kept.trace_id) == 32 and len(child.span_id) == 16


def test_a_batch_whose_rows_are_not_spans_is_refused() -> None:
    with pytest.raises(ValueError):
        traces.decode(b'{"format": 1, "service": "tools", "spans": [["only", "three", "fields"]]}')
