"""What saip says of the child processes it runs (the launcher's services, a stdio upstream, a shipped server): the
lines their output completes, and how one ended."""

from __future__ import annotations

import signal

PIECE = 8192  # bytes of a line that never ends passed on at a time: memory stays bounded whatever a child writes


def ended(code: int) -> str:
    """`exited with 3`, or `was killed by SIGKILL` for a negative return code (a signal's)."""
    if code < 0 and -code in signal.valid_signals():
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with {code}"


class ChunkLines:
    """Bytes as a child writes them, as the lines they complete: each decoded whole (a multi-byte character is never
    cut, but where a line past PIECE bytes is), without its newline."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, chunk: bytes) -> list[str]:
        *whole, self._partial = (self._partial + chunk).split(b"\n")
        while len(self._partial) > PIECE:
            whole.append(self._partial[:PIECE])
            self._partial = self._partial[PIECE:]
        return [line.decode("utf-8", errors="replace") for line in whole]

    def end(self) -> list[str]:
        """The last line, when the output ended without a newline."""
        return self.feed(b"\n") if self._partial else []
