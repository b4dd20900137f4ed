"""The machine's pace: how long one core takes for the same reference work, read before and after each benchmark.

The machines of this kind run the same code 1.5 to 2 times slower at some moments than at others (a neighbour on
the host, the host's clock), so two runs' absolute figures compare only at the same pace. Each benchmark's baseline in
the same run answers that for its own ratios; this figure answers it across runs. The reference work is pure
Python on one core, of the kind the services do per call (a JSON round trip of a small document, a SHA-256, a dict
built and read), timed as the median of `ROUNDS` rounds of wall time: a moment the core is shared shows as a slower
pace, as it does in every figure of the run.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time

ROUNDS = 7
ITEMS = 2_000  # a round's items: about 10 ms on the quick kind of this machine
DOCUMENT = {"tool": "word-count", "arguments": {"text": "the quick brown fox " * 8}, "ok": True, "n": 12}


def _round() -> float:
    started = time.perf_counter()
    for n in range(ITEMS):
        text = json.dumps(DOCUMENT)
        document = json.loads(text)
        hashlib.sha256(text.encode()).digest()
        kept = {f"{key}-{n}": value for key, value in document.items()}
        sum(len(key) for key in kept)
    return (time.perf_counter() - started) * 1000


def pace() -> float:
    """Milliseconds a round of the reference work takes now, the median of ROUNDS (lower is quicker)."""
    return statistics.median(_round() for _ in range(ROUNDS))


def line(when: str) -> str:
    return f"the machine's pace {when}: {pace():.2f} ms for the reference work (bench/pace.py; lower is quicker)"
