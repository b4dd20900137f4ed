"""`saip traces`: a listing line keeps its columns, and a trace prints as its span tree, each child under its parent
and indented one step further, failures named."""

from __future__ import annotations

from typing import Any

from saip.cli.traces import line, tree


def span(name: str, service: str, offset: float, took: float, *children: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "service": service,
        "startOffsetMs": offset,
        "durationMs": took,
        "error": False,
        "status": None,
        "children": list(children),
        **more,
    }


def test_a_trace_prints_as_its_span_tree() -> None:
    spans = [
        span(
            "mcp tools/call",
            "gateway",
            0.0,
            12.34,
            span("gate call", "gateway", 0.2, 11.0, span("sandbox run", "tools", 3.0, 6.5, error=True, status="boom")),
            span("audit chain", "audit", 12.0, 0.3),
        )
    ]

    assert list(tree(spans)) == [
        "   +0.0 ms      12.3 ms  gateway     mcp tools/call",
        "   +0.2 ms      11.0 ms  gateway       gate call",
        "   +3.0 ms       6.5 ms  tools           sandbox run  [error: boom]",
        "  +12.0 ms       0.3 ms  audit         audit chain",
    ]


def test_a_listing_line_keeps_its_columns() -> None:
    trace = {
        "traceId": "ab" * 16,
        "name": "mcp tools/call",
        "tool": "adder",
        "outcome": "OK",
        "start": "2026-12-01T15:00:00.123456Z",
        "durationMs": 4.25,
        "spanCount": 9,
        "services": ["audit", "gateway", "tools"],
        "error": False,
        "complete": True,
    }

    assert line(trace) == (
        f"2026-12-01 15:00:00       4.2 ms  OK        adder                     mcp tools/call                    9  "
        f"{'ab' * 16}  audit,gateway,tools"
    )
    running = line(trace | {"complete": False, "tool": None, "outcome": None, "error": True})
    served = line(trace | {"name": "grpc GetComposition", "tool": None, "spanCount": 12})
    assert "error     -                         mcp tools/call (no root yet)      9" in running
    assert {running.index("ab" * 16), served.index("ab" * 16)} == {line(trace).index("ab" * 16)}
