"""A forked service's own lines come out as honcho's Printer prints a relayed line (the time, the padded name, the
colour on a terminal, " | "), whole: a line waits for its newline, and lines go out in writes of whole lines of at most
PIPE_BUF bytes, a longer line in one write of its own. What bypasses the stream's `write` reaches the relay it
replaced."""

from __future__ import annotations

import io
import json
import socket
import sys
from collections.abc import Iterator
from datetime import datetime

import pytest
from honcho.colour import get_colours
from honcho.printer import Message, Printer

from saip.cli.lines import PIPE_BUF, Prefix, PrefixedLines, launcher_output

NOON = datetime(2026, 12, 2, 12, 34, 56, 789000)
LINES = ['{"msg": "chained", "seq": 1}', "", "tab\tand ünïcode", "carriage\rreturn", "last"]


class Terminal(io.StringIO):
    """What honcho's Printer writes to, saying it is a terminal (so that it colours)."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def writes() -> Iterator[tuple[socket.socket, socket.socket]]:
    """An output whose reader gets each write as it was made (one SOCK_SEQPACKET message a write)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        yield ours, theirs


def stream(output: socket.socket, *, coloured: bool = False, colour: str | None = None) -> PrefixedLines:
    return PrefixedLines(
        output.fileno(), Prefix("audit".ljust(9), colour), sys.__stdout__, coloured=coloured, now=NOON.timestamp
    )


def received(reader: socket.socket) -> list[bytes]:
    reader.setblocking(False)
    got = []
    while True:
        try:
            got.append(reader.recv(1 << 20))
        except BlockingIOError:
            return got


def honcho_prints(colour: str | None, terminal: bool) -> str:
    output = Terminal() if terminal else io.StringIO()
    printer = Printer(output, width=9)
    printer.write(Message(type="line", data="\n".join(LINES).encode() + b"\n", time=NOON, name="audit", colour=colour))
    return output.getvalue()


@pytest.mark.parametrize("terminal", [False, True], ids=["to a file or a pipe", "to a terminal"])
def test_lines_come_out_as_honcho_prints_them(writes: tuple[socket.socket, socket.socket], terminal: bool) -> None:
    ours, theirs = writes
    colour = next(get_colours())
    stream(ours, coloured=terminal, colour=colour).write("\n".join(LINES) + "\n")
    [written] = received(theirs)
    assert written.decode() == honcho_prints(colour, terminal)
    assert written.decode().startswith(
        "\033[0m\033[36m12:34:56 audit     | \033[0m" if terminal else "12:34:56 audit     | "
    )


def test_a_line_waits_for_its_newline_and_an_unended_one_is_written_at_the_end(
    writes: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = writes
    lines = stream(ours)
    lines.write('{"msg": ')
    lines.write('"split"')
    assert received(theirs) == []
    lines.write("}\npart")
    assert received(theirs) == [b'12:34:56 audit     | {"msg": "split"}\n']
    lines.end()
    assert received(theirs) == [b"12:34:56 audit     | part\n"]


def test_lines_go_out_whole_in_writes_of_at_most_pipe_buf_bytes(writes: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = writes
    batch = [json.dumps({"seq": seq, "msg": "x" * (seq % 300)}) for seq in range(200)]  # as one turn's log lines
    long = "y" * (2 * PIPE_BUF)
    stream(ours).write("\n".join([*batch[:100], long, *batch[100:]]) + "\n")
    each = received(theirs)
    assert [len(write) <= PIPE_BUF for write in each].count(False) == 1  # the long line, alone in its write
    assert b"".join(each).decode().splitlines() == [
        f"12:34:56 audit     | {line}" for line in [*batch[:100], long, *batch[100:]]
    ]
    assert all(write.endswith(b"\n") for write in each)
    assert len(each) < 20  # together, not a write a line


def test_what_bypasses_the_stream_reaches_the_relay_it_replaced(writes: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = writes
    lines = stream(ours)
    assert sys.__stdout__ is not None
    assert lines.fileno() == sys.__stdout__.fileno() and lines.buffer is sys.__stdout__.buffer
    assert (lines.encoding, lines.errors) == (sys.__stdout__.encoding, sys.__stdout__.errors)
    assert not lines.isatty()  # the service sees the pipe it saw before, not the launcher's terminal


def test_the_launchers_own_lines_are_whole_writes_when_its_stream_is_unbuffered(
    writes: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under PYTHONUNBUFFERED a `print` was two writes, its text and its newline (a forked service's line could come
    between them: "system | one started (pid=25116)18:46:40 one    | unended"); within `launcher_output` the
    launcher's prints, honcho's among them, are one write of whole lines."""
    ours, theirs = writes
    unbuffered = io.TextIOWrapper(io.FileIO(ours.fileno(), "w", closefd=False), write_through=True)
    monkeypatch.setattr(sys, "stdout", unbuffered)
    with launcher_output():
        printer = Printer(sys.stdout, width=6)
        printer.write(Message(type="line", data=b"one started (pid=7)\n", time=NOON, name="system", colour=None))
        print("\n".join(["", "saip is running", "Press Ctrl-C to stop.", ""]), flush=True)
        print("unended", end="")
    assert sys.stdout is unbuffered
    assert received(theirs) == [
        b"12:34:56 system | one started (pid=7)\n",
        b"\nsaip is running\nPress Ctrl-C to stop.\n",
        b"\n",  # print's own newline, after the text: a write of its own, but of a whole (empty) line
        b"unended\n",
    ]
