"""How `saip run` keeps its processes (`saip.cli.supervisor`): before the stack is ready a process's end stops
everything and is named last; once it is ready, a process that ends is restarted after a backoff with the same
environment and its count, what it left in its process group killed, unless it ends again and again (a crash loop),
which stops everything; a stop calls off a restart that was due; NATS is stopped after the services."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import anyio
import pytest
from honcho.printer import Printer

from saip.cli import supervisor
from saip.cli.supervisor import NATS, Supervisor, ended_line
from tests.waiting import eventually

PYTHON = sys.executable
# A service stand-in: notes its pid, its SAIP_RESTARTS and its port, then (the first instance) starts a child in its
# process group (writing nowhere, as a sandbox worker's output goes elsewhere) and exits 3, or (a restarted one) waits
# for a signal; ALWAYS makes every instance exit 3.
SERVICE = """
import json, os, signal, subprocess, sys
from pathlib import Path
record = Path(sys.argv[1])
with record.open("a") as out:
    child = None
    if "SAIP_RESTARTS" not in os.environ:
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        child = subprocess.Popen(sleeper, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
    seen = {key: os.environ.get(key) for key in ("SAIP_RESTARTS", "SAIP_PROBE_PORT")}
    out.write(json.dumps({"pid": os.getpid(), "child": child, **seen}) + "\\n")
if "SAIP_RESTARTS" not in os.environ or os.environ.get("ALWAYS"):
    sys.exit(3)
signal.pause()
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # a zombie has ended: only its parent has not collected it yet
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def signals() -> Iterator[None]:
    """The loop installs its own SIGTERM and SIGINT handlers in this process, as the launcher's; they go after."""
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)


def stop_once(when: Callable[[], bool]) -> threading.Thread:
    """A SIGTERM to this process (the launcher's, handled by the loop on the main thread) once `when` holds."""

    def stop() -> None:
        try:
            anyio.run(functools.partial(eventually, when, within=30))
        finally:  # stopped all the same: what was recorded says what went wrong
            os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=stop, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def printed(tmp_path: Path) -> Iterator[TextIO]:
    """Where the supervisor prints (its lines read back from tmp_path/output)."""
    with (tmp_path / "output").open("w", buffering=1) as output:
        yield output


def supervised(tmp_path: Path, printed: TextIO, **environment: str) -> tuple[Supervisor, Path, Path]:
    output, seen = tmp_path / "output", tmp_path / "seen"
    (tmp_path / "service.py").write_text(SERVICE)
    manager = Supervisor(Printer(printed, colour=False))
    env = {"PATH": os.environ["PATH"], "SAIP_PROBE_PORT": "4711", **environment}
    manager.add_process("probe", f"exec {PYTHON} {tmp_path / 'service.py'} {seen}", env=env)
    return manager, output, seen


def test_a_service_that_ends_once_the_stack_is_ready_is_restarted_with_its_environment_and_its_count(
    tmp_path: Path, printed: TextIO, signals: None
) -> None:
    manager, output, seen = supervised(tmp_path, printed)
    manager.ready.set()
    stopper = stop_once(lambda: len(records(seen)) == 2)
    manager.loop()
    stopper.join()
    first, second = records(seen)
    assert (first["SAIP_RESTARTS"], second["SAIP_RESTARTS"]) == (None, "1")
    assert first["SAIP_PROBE_PORT"] == second["SAIP_PROBE_PORT"] == "4711"
    assert first["pid"] != second["pid"] and not alive(int(str(second["pid"])))
    assert not alive(int(str(first["child"])))  # what it left in its process group went with it
    said = output.read_text()
    assert "probe exited with 3; restarting it in 1 s (restart 1)" in said
    assert f"probe started (pid={second['pid']})" in said
    assert manager.restarts("probe") == 1 and manager.ended_first is None and manager.returncode == 143


def test_a_service_that_keeps_ending_is_a_crash_loop_and_stops_everything(
    tmp_path: Path, printed: TextIO, monkeypatch: pytest.MonkeyPatch, signals: None
) -> None:
    monkeypatch.setattr(supervisor, "RESTART_FIRST", 0.01)
    monkeypatch.setattr(supervisor, "CRASH_LOOP", 2)
    manager, output, seen = supervised(tmp_path, printed, ALWAYS="1")
    manager.add_process("steady", f"{PYTHON} -c 'import time; time.sleep(600)'")
    manager.ready.set()
    manager.loop()
    assert [record["SAIP_RESTARTS"] for record in records(seen)] == [None, "1", "2"]
    assert manager.ended_first == ("probe", 3) and manager.crash_loop and manager.returncode == 3
    assert "sending SIGTERM to steady" in output.read_text()
    assert ended_line(("probe", 3), ready=True, crash_loop=True) == (
        "saip run: probe exited with 3 again after 2 restarts in a row, each within 60 s of its start (its lines "
        "above say why); everything else was stopped."
    )


def test_a_stop_calls_off_a_restart_that_was_due(
    tmp_path: Path, printed: TextIO, monkeypatch: pytest.MonkeyPatch, signals: None
) -> None:
    monkeypatch.setattr(supervisor, "RESTART_FIRST", supervisor.RESTART_MOST)
    manager, output, seen = supervised(tmp_path, printed)
    manager.ready.set()
    stopper = stop_once(lambda: "restarting it in 30 s (restart 1)" in output.read_text())
    manager.loop()  # ends although the restart was 30 s away
    stopper.join()
    assert len(records(seen)) == 1 and manager.restarts("probe") == 0
    assert "restarting it in 30 s (restart 1)" in output.read_text()


def test_before_the_stack_is_ready_an_end_stops_everything(tmp_path: Path, printed: TextIO, signals: None) -> None:
    manager, _, seen = supervised(tmp_path, printed)
    manager.loop()
    assert len(records(seen)) == 1 and manager.ended_first == ("probe", 3) and not manager.crash_loop


# Stand-ins for NATS and for a service, each a real process under honcho, which says it is ready (its file
# `<argv[1]>.ready`) once its SIGTERM handler is in: NATS notes when it is told to stop; the service, told to stop,
# looks whether NATS still runs (its stop still speaks to NATS) and notes what it saw.
NATS_STAND_IN = """
import signal, sys
from pathlib import Path
signal.signal(signal.SIGTERM, lambda *_: (Path(sys.argv[1]).write_text("stopped"), sys.exit(0)))
Path(sys.argv[1] + ".ready").touch()
while True:
    signal.pause()
"""
SERVICE_STAND_IN = """
import signal, sys, time
from pathlib import Path
def stop(*_):
    time.sleep(0.5)  # a service's drain, which NATS must outlast
    Path(sys.argv[2]).write_text("nats ran" if not Path(sys.argv[1]).exists() else "nats had stopped")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
Path(sys.argv[2] + ".ready").touch()
while True:
    signal.pause()
"""
# A process that ends by itself, with the code argv[1], once the files argv[2:] are there (20 s at most).
ENDS_ONCE_READY = """
import sys, time
from pathlib import Path
for _ in range(400):
    if all(Path(ready).exists() for ready in sys.argv[2:]):
        sys.exit(int(sys.argv[1]))
    time.sleep(0.05)
sys.exit("the other processes never said they were ready")
"""


def test_the_stack_stops_nats_after_the_services(tmp_path: Path) -> None:
    nats, seen = tmp_path / "nats-stopped", tmp_path / "service-saw"
    (tmp_path / "nats.py").write_text(NATS_STAND_IN)
    (tmp_path / "service.py").write_text(SERVICE_STAND_IN)
    (tmp_path / "ends.py").write_text(ENDS_ONCE_READY)
    manager = Supervisor()
    python = sys.executable
    manager.add_process(NATS, f"{python} {tmp_path / 'nats.py'} {nats}")
    manager.add_process("audit", f"{python} {tmp_path / 'service.py'} {nats} {seen}")
    # Its exit stops the stack, once both stand-ins are ready to be told.
    manager.add_process("quitter", f"{python} {tmp_path / 'ends.py'} 0 {nats}.ready {seen}.ready")
    manager.loop()
    assert seen.read_text() == "nats ran"
    assert nats.read_text() == "stopped"  # then NATS was stopped too, with SIGTERM: before honcho's SIGKILL


def test_the_process_whose_own_end_stopped_the_stack_is_named_last(tmp_path: Path) -> None:
    (tmp_path / "nats.py").write_text(NATS_STAND_IN)
    (tmp_path / "ends.py").write_text(ENDS_ONCE_READY)
    audit = tmp_path / "audit-stopped"
    manager = Supervisor()
    python = sys.executable
    manager.add_process("audit", f"{python} {tmp_path / 'nats.py'} {audit}")  # it waits to be stopped
    manager.add_process("tools", f"{python} {tmp_path / 'ends.py'} 3 {audit}.ready")
    manager.loop()
    assert manager.ended_first == ("tools", 3)
    assert ended_line(("tools", 3), ready=False) == (
        "saip run: tools exited with 3 before saip was ready (its lines above say why); everything else was stopped."
    )
    killed = ended_line(("audit", -9), ready=True)
    assert killed == "saip run: audit was killed by SIGKILL; everything else was stopped."
