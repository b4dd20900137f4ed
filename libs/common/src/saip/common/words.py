"""A counted noun, as every service's messages write it: "1 tool", "3 tools", "1 catalog entry", "2 catalog entries"."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, or `many` (the noun plus "s" when not given) for any count but one."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
