"""A forked service's own lines, written straight to `saip run`'s output with the prefix honcho would have given them.

honcho relays a process's output through three hops: its worker for that process reads each line from the pipe, puts
it on a multiprocessing queue (pickled, by a feeder thread), and the launcher takes it off and prints it with the
prefix: two more processes woken for every line, and a service that logs a line a call (the audit service: one a
chained record) would wake them for every call (docs/BENCHMARKS.md, "saip run's lines"). So a forked service writes
what its Python code writes (`sys.stdout`, `sys.stderr`: the JSON log lines, tracebacks, warnings) to the launcher's
own output itself, each line prefixed as honcho's `Printer` prefixes it (`HH:MM:SS name | `, the name padded to the
longest, in the process's colour when that output is a terminal); what reaches its descriptors 1 and 2 some other way
(a C library's own messages, `sys.stdout.buffer`, faulthandler) goes to the pipe honcho reads, and honcho prints it.

Whole lines: the text is written only up to its last newline (a line waits for its end, as honcho's `readline` makes
it wait), in writes of whole lines of at most `PIPE_BUF` bytes together (4096 on Linux; a longer line is one write of
its own). A terminal and a regular file take each write whole; a pipe takes a write of at most `PIPE_BUF` bytes
whole (POSIX), so only a single line longer than that, written to a pipe, can have another process's line in it.
The launcher's own output is written the same way while the stack runs (`launcher_output`): a `print` to an
unbuffered stream (PYTHONUNBUFFERED) is two writes, its text and then its newline, and a service's line could come
between them.

What differs from honcho's relay: a line's time is when the service wrote it, not when honcho read it; a service's
first line does not wait for honcho's `<name> started` (which comes first anyway: the service's own imports come
before its first line), and what honcho relays for it may come out after its lines written later; an output that is
not read (a `less` held on a page, a terminal held with Ctrl-S) holds the service's write once its buffer is full,
rather than the line waiting in the launcher's memory without bound.
"""

from __future__ import annotations

import io
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

PIPE_BUF = select.PIPE_BUF


@dataclass(frozen=True)
class Prefix:
    """What honcho's `Printer` puts before a process's line: its name padded to `Printer.width`, and its colour (an
    ANSI code from `honcho.colour`), used when the output is a terminal."""

    name: str
    colour: str | None = None

    def text(self, clock: str, coloured: bool) -> str:
        plain = f"{clock} {self.name} | "
        return f"\033[0m\033[{self.colour}m{plain}\033[0m" if coloured and self.colour else plain


class WholeLines(io.TextIOBase):
    """A text stream that writes only whole lines to the descriptor `output`, in writes of whole lines of at most
    `PIPE_BUF` bytes together (one longer line alone); it stands in for `stream`, whose descriptor, buffer, encoding
    and errors it shows, so that what bypasses its `write` still goes where it went.

    The launcher's own output is one (`launcher_output`): the forked services write to that output too, and a
    `print` through Python's own stream is two writes when that stream is unbuffered (PYTHONUNBUFFERED), its text
    and then its newline, between which another process's line could land."""

    def __init__(self, output: int, stream: TextIO) -> None:
        super().__init__()
        self._output = output
        self._stream = stream
        self._pending = ""  # the line not yet ended
        self._lock = threading.Lock()

    # What the stream replaced shows, so that code looking through it finds the descriptor it wrote to.
    @property
    def encoding(self) -> str:  # type: ignore[override]  # a property of TextIOBase's, read-only here as there
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors

    @property
    def buffer(self) -> io.BufferedIOBase:  # what the replaced stream wrote its bytes to
        return self._stream.buffer  # type: ignore[return-value]

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            end = text.rfind("\n")
            if end < 0:
                self._pending += text
            else:
                whole, self._pending = self._pending + text[: end + 1], text[end + 1 :]
                self._write(whole.splitlines())  # honcho's Printer splits a line as str.splitlines does
        return len(text)

    def end(self) -> None:
        """Write the line not yet ended, as honcho prints the last one of an output that ends without a newline."""
        with self._lock:
            pending, self._pending = self._pending, ""
            if pending:
                self._write(pending.splitlines())

    def _head(self) -> str:
        """What goes before each line written now."""
        return ""

    def _write(self, lines: list[str]) -> None:
        head = self._head()
        encoding, errors = self._stream.encoding, self._stream.errors or "strict"
        chunk = b""
        for line in lines:
            encoded = f"{head}{line}\n".encode(encoding, errors)
            if chunk and len(chunk) + len(encoded) > PIPE_BUF:
                self._send(chunk)
                chunk = b""
            chunk += encoded
        self._send(chunk)

    def _send(self, data: bytes) -> None:
        written = os.write(self._output, data)
        while written < len(data):  # a write a signal cut short
            data = data[written:]
            written = os.write(self._output, data)


class PrefixedLines(WholeLines):
    """Whole lines written to `output` prefixed, standing in for `relay` (the stream on the pipe honcho reads), so
    that what bypasses its `write` still reaches the launcher."""

    def __init__(
        self,
        output: int,
        prefix: Prefix,
        relay: TextIO,
        *,
        coloured: bool,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(output, relay)
        self._prefix = prefix
        self._coloured = coloured
        self._now = now
        self._second = -1  # the second whose prefix _text holds: the clock changes once a second, lines far more often
        self._text = ""

    def isatty(self) -> bool:
        return False  # no terminal, as a service started as its own interpreter sees on honcho's pipe

    def _head(self) -> str:
        now = self._now()
        if int(now) != self._second:
            self._second = int(now)
            self._text = self._prefix.text(time.strftime("%H:%M:%S", time.localtime(now)), self._coloured)
        return self._text


@contextmanager
def launcher_output() -> Iterator[None]:
    """This process's `sys.stdout` and `sys.stderr` writing whole lines only while the stack runs: what honcho prints
    (its own lines and those it relays), the connection lines and the launcher's errors, beside the lines the forked
    services write to the same output."""
    originals = sys.stdout, sys.stderr
    for stream in originals:
        stream.flush()
    sys.stdout, sys.stderr = (WholeLines(stream.fileno(), stream) for stream in originals)
    try:
        yield
    finally:
        for whole in (sys.stdout, sys.stderr):
            if isinstance(whole, WholeLines):
                whole.end()
        sys.stdout, sys.stderr = originals
