"""The JSON log lines (saip.common.logs): the timestamp made once a second writes what datetime writes, and stdout's
handler writes the lines of one event-loop turn together, in the order they were logged, and any other line at once."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from saip.common import logs
from saip.common.logs import JsonFormatter, TurnWriter


@given(st.floats(min_value=0, max_value=2**33, allow_nan=False, allow_infinity=False))
def test_the_timestamp_is_the_one_datetime_writes(created: float) -> None:
    formatter = JsonFormatter("audit")
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    assert formatter.timestamp(created) == expected
    assert formatter.timestamp(created) == expected  # again, from the second it keeps


def test_the_timestamp_keeps_up_when_the_second_changes() -> None:
    formatter = JsonFormatter("audit")
    for created in (1764626400.9995, 1764626400.9999996, 1764626401.0, 1764626399.5):
        assert formatter.timestamp(created) == datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")


class CountedWrites(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def _logger(stream: io.StringIO) -> tuple[logging.Logger, TurnWriter]:
    handler = TurnWriter(stream)
    handler.setFormatter(JsonFormatter("audit"))
    logger = logging.getLogger(f"tests.logs.{id(stream)}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, handler


def _messages(stream: io.StringIO) -> list[str]:
    return [json.loads(line)["msg"] for line in stream.getvalue().splitlines()]


def test_the_lines_of_one_turn_are_one_write_at_its_end() -> None:
    stream = CountedWrites()
    logger, _ = _logger(stream)

    async def two_turns() -> list[str]:
        for n in range(256):
            logger.info("mgmt.call n=%d", n)
        seen_in_the_turn = _messages(stream)
        await asyncio.sleep(0)  # the turn ends
        logger.info("next turn")
        await asyncio.sleep(0)
        return seen_in_the_turn

    assert asyncio.run(two_turns()) == []
    assert _messages(stream) == [f"mgmt.call n={n}" for n in range(256)] + ["next turn"]
    assert stream.writes == 2


def test_a_line_from_elsewhere_is_written_at_once_after_those_pending() -> None:
    stream = CountedWrites()
    logger, _ = _logger(stream)

    async def from_a_thread_meanwhile() -> None:
        logger.info("in the loop")
        worker = threading.Thread(target=logger.warning, args=("from a thread",))
        worker.start()
        worker.join()  # within the loop's turn: the thread's line waits for nobody
        assert _messages(stream) == ["in the loop", "from a thread"]
        logger.info("later in the same turn")

    asyncio.run(from_a_thread_meanwhile())
    logger.info("with no loop")
    assert _messages(stream) == ["in the loop", "from a thread", "later in the same turn", "with no loop"]


def test_a_loop_closed_before_its_turn_ended_leaves_no_line_behind() -> None:
    stream = io.StringIO()
    logger, handler = _logger(stream)

    async def log(message: str) -> None:
        logger.info(message)

    first = asyncio.new_event_loop()
    first.run_until_complete(log("on a loop that stops at once"))
    first.close()  # whatever was still scheduled on it is dropped
    second = asyncio.new_event_loop()
    try:
        second.run_until_complete(log("on the next loop"))
        second.run_until_complete(asyncio.sleep(0))
    finally:
        second.close()
    assert _messages(stream) == ["on a loop that stops at once", "on the next loop"]

    async def pending_at_exit() -> None:
        logger.info("pending when the process exits")

    third = asyncio.new_event_loop()
    third.run_until_complete(pending_at_exit())
    third.close()
    handler.flush()  # logging.shutdown flushes every handler at exit
    assert _messages(stream)[-1] == "pending when the process exits"


def test_a_line_after_setup_holds_its_fields_and_no_thread_process_or_source() -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    stdout = io.StringIO()
    try:
        logs.setup("audit", stream=stdout)
        logging.getLogger("saip.audit.collector").info(
            "mgmt.call tool=saip_x", extra={"index": 7, "kind": "management"}
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    line = json.loads(stdout.getvalue())
    assert set(line) == {"ts", "level", "service", "logger", "msg", "index", "kind"}
    assert (line["service"], line["logger"], line["msg"], line["index"]) == (
        "audit",
        "saip.audit.collector",
        "mgmt.call tool=saip_x",
        7,
    )
