"""JSON log lines on stdout, one setup for every service, secrets masked before they are written; the same lines go to
NATS for saip_monitor_logs_tail (saip.common.telemetry).

The lines an event loop's thread writes in one turn of the loop go to the stream in one write at the end of the turn
(`TurnWriter`): the audit service writes a line for every record it chains, a batch of them at a time, and a write
and flush each would be a system call a line. A line written where no loop runs (another thread, the start, the exit) is
written at once, after any still pending.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from saip.common import masking, telemetry
from saip.common.masking import mask_text, mask_value

# Attributes every LogRecord has; anything else on a record came from `extra=` and is emitted as a field.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's ANSI-coloured copy of the message
}


# json.dumps with options builds an encoder for every call; one made once encodes the same.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "service", "logger", "msg", ...extra}` with every value masked."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self._second = -1  # the second whose text _seconds holds: lines come thousands a second
        self._seconds = ""

    def timestamp(self, created: float) -> str:
        """`created` as `datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")` writes it (the
        fraction rounded to microseconds first, as datetime does, then cut to milliseconds), the date and time of day
        made once a second."""
        second = int(created)
        micros = round((created - second) * 1e6)
        if micros >= 1_000_000:
            second, micros = second + 1, micros - 1_000_000
        if second != self._second:
            self._seconds = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        return f"{self._seconds}.{micros // 1000:03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        # stdout's handler and the shipper share this formatter: the line is made once for both (the audit service
        # writes one for every record it chains, thousands a second).
        made = record.__dict__.get("_json_line")
        if made is not None and made[0] is self:
            return str(made[1])
        text = self._format(record)
        record.__dict__["_json_line"] = (self, text)
        return text

    def _format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self.timestamp(record.created),
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": mask_text(record.getMessage()),
        }
        for name, value in record.__dict__.items():
            if name not in _STANDARD and not name.startswith("_"):
                line[name] = mask_value(value) if isinstance(value, dict | list) else _scalar(name, value)
        if record.exc_info:
            line["exc"] = mask_text(self.formatException(record.exc_info))
        return _ENCODER.encode(line)


def _scalar(name: str, value: Any) -> Any:
    masked = masking.DEFAULT.value(value, name)  # masked as the value of `name` in a mapping would be
    return masked if isinstance(masked, int | float | bool) or masked is None else str(masked)


class TurnWriter(logging.StreamHandler[TextIO]):
    """A stream's handler that writes the lines of one turn of the event loop together, at the turn's end, and any
    other line at once (after those pending, so the stream keeps the order they were logged in)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._pending: list[str] = []
        self._newest: logging.LogRecord | None = None  # the last pending line's record, for handleError
        # The loop whose next turn writes the pending lines; a loop closed before that turn dropped the callback, so
        # a line on any other loop schedules its own.
        self._scheduled: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self.lock:  # type: ignore[union-attr]  # Handler.__init__ made it
            self._pending.append(line)
            self._newest = record
            if loop is None:
                self._write()
            elif self._scheduled is not loop:
                self._scheduled = loop
                loop.call_soon(self._end_of_turn)

    def _end_of_turn(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._scheduled = None
            self._write()

    def _write(self) -> None:
        if not self._pending:
            return
        text = self.terminator.join(self._pending) + self.terminator
        newest, self._newest = self._newest, None
        self._pending.clear()
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:
            if newest is not None:
                self.handleError(newest)  # what StreamHandler does for a line it cannot write

    def flush(self) -> None:
        """Write what is pending (logging.shutdown flushes every handler at exit)."""
        with self.lock:  # type: ignore[union-attr]
            self._write()
        super().flush()


def setup(service: str, level: str = "INFO", *, stream: TextIO | None = None) -> None:
    """Route every logger (ours, grpc's, uvicorn's, the MCP SDK's) through one JSON handler (stdout by default)."""
    # The JSON line has no thread, process or source location (they are _STANDARD attributes, left out): not looking
    # them up for every record is the logging HOWTO's "Optimization" (a third of making a record, and the walk up the
    # stack for the caller's file and line, for each of the thousands of lines a second the audit service writes).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None
    handler = TurnWriter(stream or sys.stdout)
    formatter = JsonFormatter(service)
    handler.setFormatter(formatter)
    telemetry.SHIPPER.setFormatter(formatter)
    telemetry.SHIPPER.service = service
    root = logging.getLogger()
    root.handlers[:] = [handler, telemetry.SHIPPER]
    root.setLevel(level)
    for noisy in (
        "uvicorn.access",
        "httpx",
        "httpx2",
        "mcp.server.streamable_http",
        "mcp.server.streamable_http_manager",
    ):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
