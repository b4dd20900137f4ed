"""Percentiles and the side-by-side tables the benchmarks print."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50": percentile(samples_ms, 50),
        "p90": percentile(samples_ms, 90),
        "p99": percentile(samples_ms, 99),
        "mean": statistics.fmean(samples_ms),
    }


QUANTILES = ("p50", "p90", "p99")


def row(label: str, figures: dict[str, float]) -> list[object]:
    """A table row of `figures`' p50, p90 and p99."""
    return [label, *(figures[q] for q in QUANTILES)]


def added(label: str, figures: dict[str, float], baseline: dict[str, float]) -> list[object]:
    """A table row of what `figures` add to the `baseline` measured beside them, at p50, p90 and p99."""
    return [label, *(figures[q] - baseline[q] for q in QUANTILES)]


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, header)), *[[f"{c:.2f}" if isinstance(c, float) else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    head = "  ".join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True))
    body = [
        "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        for row in cells[1:]
    ]
    return "\n".join([title, head, *body])
