"""The fork server of `saip run`: none of its stages of imports starts a thread, a service is forked once its stage
is in (and only the stages some service needs are imported), and each child it forks is what `python -m` of the
service would have been (its own environment, directory, output, process group, exit code), driven by honcho as a
process it started; given the launcher's output, it writes its own lines there as honcho prints them, whole, and
honcho's worker reads only what bypasses sys.stdout and sys.stderr; a child killed with -9 takes nothing else down,
and its channel may ask for it again (a restart); without the fork server, or once a stage failed, a service still
starts."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from honcho.process import Popen, Process

from saip.cli.forkserver import MESSAGE_BYTES, STAGES, Forked, ForkServer, NotForked, Schedule, Stage
from saip.cli.lines import Prefix
from saip.cli.stack import Plan, Spawn
from saip.cli.zygote import _Staging

ENDS_WITHIN = 30.0

# A service stand-in: says what it was given and how it runs, then exits with PROBE_EXIT, or waits for a signal.
PROBE = """
import json, os, signal, sys
print(json.dumps({
    "environment": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd(), "main": __name__,
    "name": open("/proc/self/comm").read().strip(), "pid": os.getpid(), "group": os.getpgid(0),
    "session": os.getsid(0), "stdin": os.readlink("/proc/self/fd/0"), "threads": len(os.listdir("/proc/self/task")),
    "marker": "marker" in sys.modules,
}), flush=True)
print("to stderr", file=sys.stderr, flush=True)
if os.environ.get("PROBE_WAIT"):
    signal.pause()
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""
# A service that logs: its lines through sys.stdout and sys.stderr (TALKER_LINES of them, of many lengths, as a
# service's JSON lines are), two past them (its descriptor 1, stdout's buffer), and a last one with no newline.
TALKER = """
import json, os, sys
print("from print")
print("to stderr", file=sys.stderr)
os.write(1, b"past sys.stdout\\n")
sys.stdout.buffer.write(b"through the buffer\\n")
sys.stdout.buffer.flush()
for seq in range(int(os.environ.get("TALKER_LINES", "0"))):
    print(json.dumps({"seq": seq, "pad": "x" * (seq * 37 % 1500)}), file=sys.stderr if seq % 2 else sys.stdout)
sys.stdout.write("unended")
"""


def environment(modules: Path, **own: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(modules), "PYTHONUNBUFFERED": "1", **own}


# A later stage's imports: "late" (the probe under another name) waits for them, "probe" does not.
LATER = (Stage(("marker",), ("late",)),)


def start(tmp_path: Path, stages: tuple[Stage, ...], **modules: str) -> tuple[ForkServer, Plan]:
    """A fork server for two services, "one" and "two", running the given modules (each the probe), with `stages`."""
    folder = tmp_path / "modules"
    folder.mkdir()
    for name in ("probe", "late"):
        (folder / f"{name}.py").write_text(PROBE)
    (folder / "talker.py").write_text(TALKER)
    (folder / "marker.py").write_text('"""A later stage of imports."""\n')
    (folder / "threads.py").write_text("import threading\nthreading.Thread(target=threading.Event().wait).start()\n")
    # A stage that goes on only once a test has opened and closed the FIFO `gate` (made by the test that uses it).
    (folder / "gate.py").write_text(f"open({str(tmp_path / 'gate')!r}).read()\n")
    processes = {
        "one": (f"python -m {modules['one']}", environment(folder, SAIP_ONE_PORT="1")),
        "two": (f"python -m {modules['two']}", environment(folder, SAIP_TWO_PORT="2")),
    }
    stack = Plan(tmp_path, "http://127.0.0.1:1", "admin", processes=processes, forked=modules)
    server = ForkServer(str(tmp_path), {**environment(folder), "SAIP_ADMIN_TOKEN": "admin", "SOME_SECRET": "s"})
    server.schedule(modules, stages)
    return server, stack


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[tuple[ForkServer, Plan]]:
    server, stack = start(tmp_path, LATER, one="probe", two="probe")
    try:
        yield server, stack
    finally:
        server.stop()


def report(child: Forked | Popen) -> dict[str, Any]:
    assert child.stdout is not None
    return dict(json.loads(child.stdout.readline()))


def ended(child: Forked | Popen) -> int:
    """Its exit code, once its output has ended (as honcho's worker reads it)."""
    assert child.stdout is not None
    child.stdout.read()
    child.stdout.close()
    return child.wait()


def ends(output: BinaryIO) -> bool:
    """Whether the output reaches its end with nothing more in it: a pipe whose write end some process still holds
    never does, and is given up after `ENDS_WITHIN` seconds rather than read forever."""
    readable, _, _ = select.select([output], [], [], ENDS_WITHIN)
    return bool(readable) and output.read() == b""


def test_no_stage_of_imports_starts_a_thread() -> None:
    probe = (
        "import importlib, os, sys, threading; from saip.cli import forkserver, zygote; zygote.preload(); "
        "assert 'grpc.aio' in sys.modules and 'saip.v1.tools_pb2_grpc' in sys.modules; "
        "print(len(threading.enumerate()), len(os.listdir('/proc/self/task'))); "
        "[importlib.import_module(name) for stage in forkserver.STAGES for name in stage.imports]; "
        "assert 'mcp_types' in sys.modules; "
        "print(len(threading.enumerate()), len(os.listdir('/proc/self/task')))"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    # Python's threads, and the process's (gRPC's C core would add its own), after the shared set and every stage.
    assert shown == ["1", "1", "1", "1"]


def test_the_tools_service_and_the_gateway_wait_for_the_sdk_s_types_the_others_do_not() -> None:
    schedule = Schedule({3: "saip.audit", 4: "saip.tools", 5: "saip.gateway"})
    assert [schedule.stage_of(module) for module in schedule.channels.values()] == [0, 1, 1]
    assert schedule.needed() == STAGES
    assert Schedule({3: "saip.audit", 4: "saip.knowledge"}).needed() == ()  # nothing beyond the shared set
    assert Schedule.decode(schedule.encode(), list(schedule.channels)) == schedule


def test_a_request_waits_for_its_stage_and_no_other(tmp_path: Path) -> None:
    first, second = socket.socketpair()
    with first, second:
        staging = _Staging(list(LATER))
        staging.waiting = [(first, {"module": "late"}, -1), (second, {"module": "probe"}, -1)]
        schedule = Schedule({first.fileno(): "late", second.fileno(): "probe"}, LATER)
        assert [channel for channel, _, _ in staging.ready(schedule)] == [second]  # not behind the one that waits
        sys.path.insert(0, str(tmp_path))
        (tmp_path / "marker.py").write_text('"""A later stage of imports."""\n')
        try:
            staging.import_next()
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("marker", None)
        assert [channel for channel, _, _ in staging.ready(schedule)] == [first] and staging.refusing is None


def test_a_service_is_forked_once_its_stage_is_in(tmp_path: Path) -> None:
    server, stack = start(tmp_path, LATER, one="probe", two="late")
    try:
        late = Forked(server.channels["two"], "late", stack.processes["two"][1], str(tmp_path))
        assert report(late)["marker"] is True
        assert ended(late) == 0
        one = Forked(server.channels["one"], "probe", stack.processes["one"][1], str(tmp_path))
        assert report(one)["pid"] == one.pid and ended(one) == 0
    finally:
        server.stop()


def test_services_forked_one_after_the_other_hold_none_of_each_other_s_output(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "gate")
    server, stack = start(tmp_path, (Stage(("gate",), ("late",)),), one="late", two="late")
    outputs, pids = {}, {}
    try:
        for name in ("one", "two"):  # both asked while the stage is held: the zygote forks them one after the other
            read, write = os.pipe()
            request = {"module": "late", "environment": {**stack.processes[name][1], "PROBE_WAIT": "1"}, "cwd": "."}
            socket.send_fds(server.channels[name], [json.dumps(request).encode()], [write])
            os.close(write)
            outputs[name] = os.fdopen(read, "rb")
        with open(tmp_path / "gate", "w"):  # the stage's import goes on once it is closed
            pass
        pids = {name: json.loads(server.channels[name].recv(MESSAGE_BYTES))["pid"] for name in outputs}
        assert [json.loads(outputs[name].readline())["pid"] for name in outputs] == list(pids.values())
        # Both have written all they write before they wait, so what follows a signal is only the end of the output.
        assert [outputs[name].readline() for name in outputs] == [b"to stderr\n"] * 2
        os.kill(pids["two"], signal.SIGKILL)
        # Its output ends although the other service, forked before it, still runs: no copy of its pipe is left.
        assert ends(outputs["two"])
        assert json.loads(server.channels["two"].recv(MESSAGE_BYTES)) == {"returncode": -signal.SIGKILL}
        os.killpg(pids["one"], signal.SIGTERM)
        assert ends(outputs["one"])
    finally:
        for pid in pids.values():  # a failed assertion leaves no service waiting for a signal
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        for output in outputs.values():
            output.close()
        server.stop()


@pytest.mark.parametrize(
    ("imports", "said"),
    [(("no_such_module",), "failed (ModuleNotFoundError"), (("threads",), "started a thread")],
    ids=["an import that fails", "an import that starts a thread"],
)
def test_after_a_stage_that_fails_nothing_is_forked_and_each_service_starts_as_its_own_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], imports: tuple[str, ...], said: str
) -> None:
    server, stack = start(tmp_path, (Stage(imports, ("late",)),), one="probe", two="late")
    try:
        for name, module in (("two", "late"), ("one", "probe")):
            with pytest.raises(NotForked, match=re.escape(f"did not fork {module}: importing {imports[0]} {said}")):
                Forked(server.channels[name], module, stack.processes[name][1], str(tmp_path))
            given = stack.processes[name][1]
            child = Spawn(server.channels[name], module)(f"{sys.executable} -m {module}", env=given, cwd=str(tmp_path))
            assert isinstance(child, Popen) and report(child)["name"] == "python" and ended(child) == 0
        assert "starting it as its own interpreter" in capsys.readouterr().err
    finally:
        server.process.kill()  # a thread it started keeps it from exiting
        server.stop()


def test_the_fork_server_gets_only_the_basics_of_the_launcher_s_environment(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, _ = zygote
    zygote_environment = Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")
    assert {entry.decode().split("=", 1)[0] for entry in zygote_environment if entry} == {
        "PATH",
        "PYTHONPATH",
        "PYTHONUNBUFFERED",
    }


def test_a_launcher_that_stops_before_it_planned_leaves_no_fork_server(tmp_path: Path) -> None:
    server = ForkServer(str(tmp_path), dict(os.environ))
    server.stop()
    # Ended by its SIGTERM through its imports, or on its own after them; never stop()'s SIGKILL after its bound.
    assert server.process.returncode in (0, -signal.SIGTERM)


def test_a_child_is_python_m_of_its_module_with_exactly_its_environment(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    _, given = stack.processes["one"]
    child = Forked(server.channels["one"], "probe", {**given, "PROBE_EXIT": "3"}, str(tmp_path))
    seen = report(child)
    assert seen["environment"] == {**given, "PROBE_EXIT": "3"}
    assert seen["main"] == "__main__" and seen["argv"] == [str(tmp_path / "modules" / "probe.py")]
    assert seen["cwd"] == str(tmp_path) and seen["stdin"] == os.devnull
    # Its own session and process group, as honcho makes each process it starts; the launcher's SIGTERM goes there.
    assert seen["pid"] == child.pid == seen["group"] == seen["session"]
    assert seen["name"] == "probe" and seen["threads"] == 1
    assert child.stdout.readline() == b"to stderr\n"  # stderr on the same pipe, as honcho's processes have it
    assert ended(child) == 3


def test_a_child_killed_with_9_is_reported_and_takes_nothing_down(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    one = Forked(server.channels["one"], "probe", {**stack.processes["one"][1], "PROBE_WAIT": "1"}, str(tmp_path))
    two = Forked(server.channels["two"], "probe", {**stack.processes["two"][1], "PROBE_WAIT": "1"}, str(tmp_path))
    report(one), report(two)
    os.kill(one.pid, signal.SIGKILL)
    assert ended(one) == -signal.SIGKILL
    assert server.process.poll() is None
    os.killpg(two.pid, signal.SIGTERM)  # what honcho sends each process's group when it stops the stack
    assert ended(two) == -signal.SIGTERM


def test_a_service_that_ended_is_forked_again_on_its_channel_as_a_restart_asks(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    given = {**stack.processes["one"][1], "PROBE_WAIT": "1"}
    first = Forked(server.channels["one"], "probe", given, str(tmp_path))
    report(first)
    os.kill(first.pid, signal.SIGKILL)
    assert ended(first) == -signal.SIGKILL
    again = Forked(server.channels["one"], "probe", {**given, "SAIP_RESTARTS": "1"}, str(tmp_path))
    seen = report(again)
    assert seen["pid"] == again.pid != first.pid and seen["environment"]["SAIP_RESTARTS"] == "1"
    os.killpg(again.pid, signal.SIGTERM)
    assert ended(again) == -signal.SIGTERM


def test_honcho_drives_a_forked_service_as_a_process_it_started(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    command, given = stack.processes["one"]
    process = Process(command, name="one", env={**given, "PROBE_EXIT": "4"}, cwd=str(tmp_path))
    process._child_ctor = Spawn(server.channels["one"], "probe")
    events: queue.Queue[Any] = queue.Queue()
    process.run(events)
    messages = [events.get_nowait() for _ in range(events.qsize())]
    started, *lines, stopped = messages
    assert started.type == "start" and json.loads(lines[0].data)["pid"] == started.data["pid"]
    assert lines[1].data == b"to stderr\n"
    assert (stopped.type, stopped.data) == ("stop", {"returncode": 4})


def test_without_the_fork_server_a_service_starts_as_its_own_interpreter(
    zygote: tuple[ForkServer, Plan], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, stack = zygote
    server.process.kill()
    server.process.wait()
    given = stack.processes["two"][1]
    child = Spawn(server.channels["two"], "probe")(f"{sys.executable} -m probe", env=given, cwd=str(tmp_path))
    assert isinstance(child, Popen)
    assert report(child)["environment"]["SAIP_TWO_PORT"] == "2"
    assert ended(child) == 0
    said = capsys.readouterr().err
    assert "the fork server" in said and "probe" in said and "starting it as its own interpreter" in said


def test_the_fork_server_exits_once_the_launcher_lets_go_and_every_child_is_reaped(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    child = Forked(server.channels["one"], "probe", stack.processes["one"][1], str(tmp_path))
    assert ended(child) == 0
    server.stop()
    assert server.process.returncode == 0


def test_a_child_outlives_the_fork_server_and_its_unknown_exit_code_is_said(
    zygote: tuple[ForkServer, Plan], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, stack = zygote
    child = Forked(server.channels["one"], "probe", {**stack.processes["one"][1], "PROBE_WAIT": "1"}, str(tmp_path))
    report(child)
    server.process.kill()
    server.process.wait()
    os.kill(child.pid, 0)  # still running: the fork server's end takes none of its children with it
    os.killpg(child.pid, signal.SIGTERM)
    assert ended(child) == 1
    assert f"the fork server is gone, so {child.pid}'s exit code is unknown: 1" in capsys.readouterr().err


def test_a_forked_service_writes_its_own_lines_as_honcho_prints_them_and_honcho_reads_only_the_rest(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    command, given = stack.processes["one"]
    read, write = os.pipe()
    with os.fdopen(read, "rb") as launcher_output:
        process = Process(command, name="one", env=given, cwd=str(tmp_path))
        process._child_ctor = Spawn(server.channels["one"], "talker", (write, Prefix("one".ljust(6), "36")))
        events: queue.Queue[Any] = queue.Queue()
        process.run(events)
        os.close(write)
        written = launcher_output.read().decode().splitlines()
    started, *relayed, stopped = [events.get_nowait() for _ in range(events.qsize())]
    assert (started.type, stopped.data) == ("start", {"returncode": 0})
    assert [message.data for message in relayed] == [b"past sys.stdout\n", b"through the buffer\n"]
    # Not a terminal: no colour, as honcho's Printer gives none there.
    assert [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in written] == [
        "one    | from print",
        "one    | to stderr",
        "one    | unended",
    ]


def gather(read: int, into: bytearray) -> None:
    with os.fdopen(read, "rb") as output:
        into.extend(output.read())


@pytest.mark.parametrize("into", ["a file", "a pipe"])
def test_the_lines_of_services_writing_at_once_never_mix(
    zygote: tuple[ForkServer, Plan], tmp_path: Path, into: str
) -> None:
    server, stack = zygote
    count, taken = 3000, bytearray()
    reader = None
    if into == "a file":  # `saip run > log`: every service writes through the launcher's one open file
        write = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    else:  # `saip run | less`
        read, write = os.pipe()
        reader = threading.Thread(target=gather, args=(read, taken), daemon=True)
        reader.start()
    children = [
        Forked(
            server.channels[name],
            "talker",
            {**stack.processes[name][1], "TALKER_LINES": str(count)},
            str(tmp_path),
            (write, Prefix(name, None)),
        )
        for name in ("one", "two")
    ]
    assert [ended(child) for child in children] == [0, 0]
    os.close(write)
    if reader is None:
        taken.extend((tmp_path / "log").read_bytes())
    else:
        reader.join(ENDS_WITHIN)
    lines = taken.decode().splitlines()
    for name in ("one", "two"):
        own = [line.split(" | ", 1)[1] for line in lines if line[9:].startswith(f"{name} | ")]
        assert [json.loads(line)["seq"] for line in own[2:-1]] == list(range(count))  # each whole, in its order
    assert len(lines) == 2 * (count + 3)  # and nothing else: no line cut in two


def test_on_a_terminal_a_forked_service_s_prefix_is_in_its_colour(
    zygote: tuple[ForkServer, Plan], tmp_path: Path
) -> None:
    server, stack = zygote
    terminal, output = os.openpty()
    tty.setraw(output)  # the bytes as written, without the terminal's newline translation
    try:
        child = Forked(
            server.channels["one"], "talker", stack.processes["one"][1], str(tmp_path), (output, Prefix("one", "36"))
        )
        assert ended(child) == 0
        written = os.read(terminal, 1 << 16).decode()
    finally:
        os.close(terminal)
        os.close(output)
    assert re.fullmatch(r"\033\[0m\033\[36m\d\d:\d\d:\d\d one \| \033\[0mfrom print", written.splitlines()[0])


# `saip run`'s supervision of two forked services, with its output in a file: "one" talks and exits, "two" waits.
SUPERVISED = """
import os, sys
from pathlib import Path
from saip.cli.stack import Plan, supervise
from saip.cli.forkserver import ForkServer
folder, home = sys.argv[1:]
given = {"PATH": os.environ["PATH"], "PYTHONPATH": folder, "PYTHONUNBUFFERED": "1"}
processes = {"one": ("python -m talker", given), "two": ("python -m probe", {**given, "PROBE_WAIT": "1"})}
forked = {"one": "talker", "two": "probe"}
server = ForkServer(home, given)
server.schedule(forked, ())
try:
    sys.exit(supervise(Plan(Path(home), "http://127.0.0.1:1", "admin", processes, forked), server))
finally:
    server.stop()
"""


def test_saip_run_prints_each_forked_service_s_lines_under_its_name_beside_honcho_s_own(tmp_path: Path) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "talker.py").write_text(TALKER)
    (modules / "probe.py").write_text(PROBE)
    log = tmp_path / "log"
    with log.open("wb") as output:  # `saip run > log`
        supervised = subprocess.run(
            [sys.executable, "-c", SUPERVISED, str(modules), str(tmp_path)],
            stdout=output,
            stderr=subprocess.PIPE,
            timeout=ENDS_WITHIN,
            check=False,
        )
    said = [tuple(re.sub(r"^\d\d:\d\d:\d\d ", "", line).split(" | ", 1)) for line in log.read_text().splitlines()]
    # The services' own lines, those honcho relays, and honcho's own, under the same names padded alike.
    # (What honcho relays comes out a little later than what the service writes itself: their order may differ.)
    one = ["from print", "to stderr", "past sys.stdout", "through the buffer", "unended"]
    assert sorted(text for name, text in said if name == "one   ") == sorted(one)
    [two] = [json.loads(text) for name, text in said if name == "two   " and text.startswith("{")]
    assert ("two   ", "to stderr") in said
    assert {("system", "one stopped (rc=0)"), ("system", f"sending SIGTERM to two (pid {two['pid']})")} <= set(said)
    assert ("system", "two stopped (rc=-15)") in said
    assert supervised.returncode == 0, supervised.stderr
