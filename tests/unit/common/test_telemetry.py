"""What a process says of itself (saip.common.telemetry): its heartbeat (with the restarts `saip run` gave it), and
the log lines it keeps for NATS while the connection is away, bounded and formatted as stdout has them."""

from __future__ import annotations

import io
import json
import logging
import os

import pytest

from saip.common import logs, telemetry
from saip.common.logs import JsonFormatter


def test_the_heartbeat_describes_this_process() -> None:
    beat = telemetry.heartbeat("gateway")
    assert beat.service == "gateway" and beat.replica.endswith(f"-{os.getpid()}")
    assert beat.version == "0.1.0"
    assert beat.rss_bytes > 0 and beat.open_fds > 0 and beat.threads >= 1 and beat.cpu_seconds > 0
    assert beat.started_at.ToNanoseconds() <= beat.at.ToNanoseconds()


def test_the_heartbeat_carries_the_restarts_saip_run_gave_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAIP_RESTARTS", raising=False)
    assert telemetry.heartbeat("tools").restarts == 0  # not restarted, or not started by saip run
    monkeypatch.setenv("SAIP_RESTARTS", "3")
    assert telemetry.heartbeat("tools").restarts == 3
    monkeypatch.setenv("SAIP_RESTARTS", "three")
    assert telemetry.heartbeat("tools").restarts == 0


def test_a_forked_process_reports_its_own_start_not_its_parent_s_import() -> None:
    before = telemetry.heartbeat("gateway").started_at.ToNanoseconds()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its start, as the fork server's services are started
        os.close(read)
        os.write(write, str(telemetry.heartbeat("gateway").started_at.ToNanoseconds()).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as child:
        forked = int(child.read())
    assert os.waitpid(pid, 0)[1] == 0
    assert forked > before


def test_the_shipper_keeps_the_newest_lines_masked_and_never_its_own_transports() -> None:
    shipper = telemetry.LogShipper()
    shipper.setFormatter(JsonFormatter("tools"))
    record = logging.LogRecord("saip.tools", logging.INFO, __file__, 1, "nothing yet", None, None)
    shipper.emit(record)
    assert shipper.take() == []  # no service: this process ships nothing

    shipper.service = "tools"
    for n in range(telemetry.BUFFER + 5):
        shipper.emit(logging.LogRecord("saip.tools", logging.INFO, __file__, 1, f"line {n} token=abcd1234", None, None))
    shipper.emit(logging.LogRecord("nats.aio.client", logging.ERROR, __file__, 1, "reconnecting", None, None))
    lines = [json.loads(line) for line in shipper.take()]
    assert len(lines) == telemetry.BUFFER
    assert lines[0]["msg"] == "line 5 token=***" and lines[-1]["msg"] == f"line {telemetry.BUFFER + 4} token=***"
    assert {line["service"] for line in lines} == {"tools"}


def test_stdout_and_the_shipper_have_the_same_masked_line() -> None:
    root = logging.getLogger()
    handlers, level, service = root.handlers[:], root.level, telemetry.SHIPPER.service
    stdout = io.StringIO()
    try:
        logs.setup("audit", stream=stdout)
        telemetry.SHIPPER.take()
        logging.getLogger("saip.audit.collector").info(
            "mgmt.call tool=saip_x password=hunter22", extra={"index": 7, "api_key": "abcd1234", "kind": "management"}
        )
        shipped = telemetry.SHIPPER.take()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        telemetry.SHIPPER.service = service

    assert [line.decode() for line in shipped] == stdout.getvalue().splitlines()
    line = json.loads(shipped[0])
    assert line["msg"] == "mgmt.call tool=saip_x password=***"
    assert (line["index"], line["api_key"], line["kind"]) == (7, "***", "management")


def test_lines_go_in_messages_bounded_by_count_and_bytes_in_order() -> None:
    lines = [f'{{"msg": "line {n}"}}'.encode() for n in range(telemetry.MESSAGE_LINES * 2 + 3)]
    payloads = list(telemetry.batches(lines))
    assert [len(telemetry.lines_of(payload)) for payload in payloads] == [
        telemetry.MESSAGE_LINES,
        telemetry.MESSAGE_LINES,
        3,
    ]
    assert [line for payload in payloads for line in telemetry.lines_of(payload)] == lines

    big = b"x" * (telemetry.MESSAGE_BYTES // 2)
    huge = b"y" * (telemetry.MESSAGE_BYTES + 1)  # longer than a message may be: it goes alone
    payloads = list(telemetry.batches([big, big, b"small", huge, b"after"]))
    assert [telemetry.lines_of(payload) for payload in payloads] == [[big], [big, b"small"], [huge], [b"after"]]
    assert all(len(payload) <= telemetry.MESSAGE_BYTES for payload in payloads if payload != huge)
    assert list(telemetry.batches([])) == []


def test_a_message_of_one_line_is_that_line() -> None:
    # What a producer that sends each line alone publishes is read as it was.
    line = b'{"msg": "a line\\nwith an escaped newline"}'
    assert next(telemetry.batches([line])) == line
    assert telemetry.lines_of(line) == [line]
