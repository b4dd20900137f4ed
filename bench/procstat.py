"""What a process has spent so far, read from Linux's /proc: the CPU time and memory figures the benchmarks report.

CPU time is the measure the benchmarks lean on where wall time is blurred by other work on the same cores; it is
counted in clock ticks (`CLOCK_TICKS` a second, 100 on these machines), so a figure per call is only as fine as a
tick over the number of calls.
"""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1  # what a CPU budget of the whole machine divides
MEMORY_FIELDS = ("VmRSS", "RssAnon", "VmHWM")


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process (all its threads) has spent so far."""
    # The command name in parentheses may hold spaces or parentheses of its own: the fields start after the last ")".
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime and stime, fields 14 and 15 of proc(5)


def memory(pid: int) -> dict[str, float]:
    """VmRSS (resident), RssAnon (its heap part) and VmHWM (the peak resident size), in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in MEMORY_FIELDS:
            fields[name] = int(value.split()[0]) / 1024
    return fields


def rss(pid: int) -> float:
    """Resident memory in MiB."""
    return memory(pid).get("VmRSS", 0.0)
