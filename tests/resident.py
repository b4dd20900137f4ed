"""This process's resident memory as Linux counts it (/proc/self): the current size, the peak, and the peak started
over from the current size, so a test or a benchmark sees what one step of it held at most."""

from __future__ import annotations

from pathlib import Path


def resident_kib(field: str = "VmRSS") -> int:
    """`VmRSS` (now) or `VmHWM` (the peak since the start or the last `reset_peak`), in KiB."""
    status = Path("/proc/self/status").read_text(encoding="ascii")
    line = next(line for line in status.splitlines() if line.startswith(f"{field}:"))
    return int(line.split()[1])


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
