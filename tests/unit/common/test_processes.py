"""How saip says a child process ended, and its output read as the lines it completes: a multi-byte character split
across two reads stays whole, a line that never ends is passed on in bounded pieces."""

from __future__ import annotations

from saip.common.processes import PIECE, ChunkLines, ended


def test_a_return_code_is_said_as_an_exit_or_the_signal_that_killed_it() -> None:
    assert [ended(0), ended(3), ended(-9), ended(-15)] == [
        "exited with 0",
        "exited with 3",
        "was killed by SIGKILL",
        "was killed by SIGTERM",
    ]


def test_lines_are_decoded_whole_and_a_long_one_in_pieces() -> None:
    lines = ChunkLines()
    word = "prêt".encode()
    assert lines.feed(b"one\n" + word[:3]) == ["one"]
    assert lines.feed(word[3:] + b"\n") == ["prêt"]
    assert [len(piece) for piece in lines.feed(b"x" * (PIECE + 10))] == [PIECE]
    assert lines.end() == ["x" * 10] and lines.end() == []
