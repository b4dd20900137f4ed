"""JSON log lines on stdout, one setup for every service, secrets masked before they are written; the same lines go to
NATS for saip_monitor_logs_tail (saip.common.telemetry)."""

from __future__ import annotations

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


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "service", "logger", "msg", ...extra}` with every value masked."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

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
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
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
        return json.dumps(line, ensure_ascii=False, default=str)


def _scalar(name: str, value: Any) -> Any:
    masked = masking.DEFAULT.value(value, name)  # masked as the value of `name` in a mapping would be
    return masked if isinstance(masked, int | float | bool) or masked is None else str(masked)


def setup(service: str, level: str = "INFO", *, stream: TextIO | None = None) -> None:
    """Route every logger (ours, grpc's, uvicorn's, the MCP SDK's) through one JSON handler (stdout by default)."""
    handler = logging.StreamHandler(stream or sys.stdout)
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
