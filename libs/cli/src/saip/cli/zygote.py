"""The fork server of `saip run` (`python -m saip.cli.zygote FD`), the fork side: one interpreter imports what every
Python service imports before its own code (gRPC, protobuf and saip.v1's generated modules, nats-py, anyio, Pydantic
and pydantic-settings, prometheus-client, OpenTelemetry, saip.common: the larger part of a service's start), once,
and forks each service from itself, so the services share those pages and skip those imports. Compose
and k8s keep one process per container: each service's own `python -m saip.<service>` is unchanged and is what a
forked child runs (`runpy`, as `-m` does). The launcher's side, and the protocol between them, is
`saip.cli.forkserver`.

It imports in stages (`forkserver.STAGES`), forking each service as soon as what it shares with others is in: the
audit, knowledge and shipyard services right after the shared set, while the zygote goes on to import what the tools
service and the gateway both import beyond it (the MCP SDK's types and httpx2, paid once rather than in each), then
forks those two. So the small services run on the core the zygote's serial
imports leave idle, and the gateway, the start's critical path, waits for nothing it would not have imported itself.
A request for a service whose stage is not reached yet waits for it; requests are served in the order they came, and
a channel may ask again once its service has ended (the launcher restarts a service that dies). Nothing only one
service imports is imported here: it would be the same CPU on the same path, with the zygote holding it.

Why forking here is safe, checked rather than assumed:

- gRPC: its C core does not survive a fork once it has started its threads and pollers, which it does when the
  first channel or server is made (grpc's doc/fork_support.md; `GRPC_ENABLE_FORK_SUPPORT` only covers client
  channels made before a fork, with the poll strategy). Its "use after fork" case is always safe: the parent has
  imported grpc and made no channel, server or call. Importing grpc, grpc.aio, the health and reflection services and
  every generated module starts no thread, nor does any later stage: the zygote holds one (`threading.enumerate()` and
  /proc/self/task after each stage; a unit test checks both), and it never makes a gRPC object. It checks again after
  each later stage's imports: a stage that started a thread, or failed, makes it fork nothing more (each service left
  is started as its own interpreter, said on stderr). The variable is neither set nor needed.
- No asyncio loop and no thread exist before a fork: the zygote is one thread in a blocking `selectors` loop; each
  child starts its own loop (`anyio.run`) in its own code, as a fresh interpreter would.
- Environment: the zygote gets only what every service it forks gets alike (`forkserver.environment`: the basics, the
  OpenTelemetry SDK's OTEL_* and unbuffered output, which each one's environment from the key manifest holds with the
  same values), so what the shared modules read at import (locale, OTEL_*, PYTHON* at the interpreter's start) is
  what each service would have read; a child's environment is replaced by exactly its own (`os.environ`, which sets
  the C environment too) before its own imports or settings read it. Its working directory is the launcher's.
- Output: each child's descriptors 1 and 2 are the pipe its launcher worker reads (passed over the socket with
  SCM_RIGHTS), and it holds no other service's (so each pipe ends when its own service does); stdin is /dev/null.
  When the request also carries the launcher's output and the prefix honcho would print, the child's `sys.stdout`
  and `sys.stderr` write their lines there themselves, prefixed (`saip.cli.lines`: what it guarantees is said
  there), and only what bypasses them goes through the pipe; so its lines come out under its name.
- Signals: each child is a session and process-group leader (`setsid`), as honcho makes every process it starts, so
  the launcher's SIGTERM to its group reaches it (and the sandbox workers it spawned) and a terminal's Ctrl-C reaches
  only the launcher; its signal handlers are the interpreter's defaults (the zygote's SIGCHLD handler and wakeup fd
  are undone in the child). A `kill -9` of one service takes no other process down: the zygote reaps it and tells its
  worker the exit code (-9), which the launcher reports before it restarts the service (`saip.cli.stack`).
- State made at import that a fork would copy: none that matters. `random` reseeds itself in a forked child, and no
  shared module keeps a generator of its own (no module-level `Random()`: checked); pids, loggers' handlers, the
  OpenTelemetry provider, NATS client ids and gRPC's core are all made by the service at its start, in the child.
- Processes a service spawns (the tools service's sandbox workers, stdio upstream servers) are exec'd by
  `subprocess`: they inherit nothing of the zygote but what their parent gives them.
- Identity: a child's command line in /proc is the zygote's, so it renames its thread to `saip.<service>` (what `ps
  -e` and /proc/<pid>/comm show); the launcher prints each service's pid (`<name> started (pid=N)`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from saip.cli.forkserver import MESSAGE_BYTES, MOST_SERVICES, Schedule, Stage
from saip.cli.lines import Prefix, PrefixedLines

# What every Python service imports before its own code, found by intersecting the modules each service's
# `python -m` has loaded when it starts serving (the gRPC server's modules too: the gateway, which has none, pays
# nothing for them but shared pages). saip.v1's generated modules are added by `preload`.
SHARED = (
    "grpc",
    "grpc.aio",
    "grpc_health.v1.health",
    "grpc_reflection.v1alpha.reflection",
    "google.protobuf",
    "nats",
    "anyio",
    "pydantic",
    "pydantic_settings",
    "prometheus_client",
    "yaml",
    "tenacity",
    "saip.common.bus",
    "saip.common.configuration",
    "saip.common.grpc_server",
    "saip.common.lifecycle",
    "saip.common.logs",
    "saip.common.metrics",
    "saip.common.settings",
    "saip.common.telemetry",
    "saip.common.tracing",
)
PR_SET_NAME = 15  # prctl(2): the calling thread's name, 15 bytes at most


@dataclass(frozen=True)
class Job:
    """What a forked child runs: `python -m <module>` with exactly this environment, in this directory."""

    module: str
    environment: dict[str, str]
    cwd: str
    output: int  # the write end of the pipe its launcher worker reads
    lines: tuple[int, Prefix] | None = None  # the launcher's output and the prefix, when it writes its lines itself


def preload() -> None:
    """Import the shared set and every generated saip.v1 module (which service needs which is the service's
    business; together they are a few hundredths of a second)."""
    for name in SHARED:
        importlib.import_module(name)
    import saip.v1  # a namespace package: its folder is on __path__

    for entry in sorted(name for folder in saip.v1.__path__ for name in os.listdir(folder)):
        if entry.endswith(("_pb2.py", "_pb2_grpc.py")):
            importlib.import_module(f"saip.v1.{entry.removesuffix('.py')}")


def threads() -> tuple[int, int]:
    """The threads this process holds, for Python and for the kernel (a C library's thread too)."""
    return threading.active_count(), len(os.listdir("/proc/self/task"))


def single_threaded() -> bool:
    """Whether this process holds only its own thread."""
    return threads() == (1, 1)


@dataclass
class _Staging:
    """The later stages still to import, how far the zygote has come, and why it forks nothing more, if it does not."""

    stages: list[Stage]
    reached: int = 0
    refusing: str | None = None
    waiting: list[tuple[socket.socket, dict[str, Any], list[int]]] = field(default_factory=list)

    def ready(self, schedule: Schedule) -> list[tuple[socket.socket, dict[str, Any], list[int]]]:
        """The waiting requests to answer now, in the order they came: each whose stage is in, or every one once no
        stage is left to import (a module asked on a channel it was not expected on gets what there is)."""
        ready = [
            entry for entry in self.waiting if not self.stages or schedule.stage_of(entry[1]["module"]) <= self.reached
        ]
        self.waiting = [entry for entry in self.waiting if entry not in ready]
        return ready

    def import_next(self) -> None:
        stage = self.stages.pop(0)
        before = threads()  # (1, 1) in the zygote, which checked that after the shared set
        try:
            for name in stage.imports:
                importlib.import_module(name)
        except Exception as exc:  # any failure of a broken install: each service left says it, as its own interpreter
            self.refuse(f"importing {', '.join(stage.imports)} failed ({exc!r})")
        else:
            if threads() != before:
                self.refuse(f"importing {', '.join(stage.imports)} started a thread, after which no fork is safe")
        self.reached += 1

    def refuse(self, why: str) -> None:
        self.refusing = why
        self.stages.clear()
        print(f"saip fork server: {why}; it forks no more services", file=sys.stderr, flush=True)

    def drop(self, channel: socket.socket) -> None:
        """Forget the requests of a channel whose worker is gone: nobody would read that service's output."""
        for entry in [entry for entry in self.waiting if entry[0] is channel]:
            self.waiting.remove(entry)
            _close(entry[2])


def serve(channels: list[socket.socket], schedule: Schedule) -> Job | None:
    """Fork a child for each request until every channel is closed and every child reaped; returns None then in the
    zygote, and the child's Job in each forked child (which has closed everything of the zygote's). Between requests
    it imports the schedule's next stage, and forks each request that waited for it, in the order they came."""
    staging = _Staging(list(schedule.needed()))
    if not single_threaded():
        staging.refuse("importing the shared set started a thread, after which no fork is safe")
    selector = selectors.DefaultSelector()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    # SIGCHLD is ignored by default, which would not wake the loop: a handler that does nothing makes Python write the
    # signal to the wakeup pipe, which the loop selects on and then reaps.
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_write)
    selector.register(wake_read, selectors.EVENT_READ, data=None)
    for channel in channels:
        selector.register(channel, selectors.EVENT_READ, data=channel)
    open_channels = set(channels)
    children: dict[int, socket.socket] = {}
    while open_channels or children:
        # Requests and exits first; the next stage's imports only once none is pending (a zero timeout).
        events = selector.select(0 if staging.stages else None)
        for key, _ in events:
            channel = key.data
            if channel is None:
                _drain(wake_read)
                _reap(children)
                continue
            message, descriptors, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 2)
            if not message:  # the launcher and its worker have both let go of this one
                selector.unregister(channel)
                open_channels.discard(channel)
                staging.drop(channel)
                channel.close()
                _close(descriptors)
                continue
            staging.waiting.append((channel, json.loads(message), descriptors))
        if not events and staging.stages:
            staging.import_next()
        ready = staging.ready(schedule)
        while ready:
            channel, request, given = ready.pop(0)
            if staging.refusing is not None:
                _close(given)
                _send(channel, {"refused": staging.refusing})
                continue
            pid = os.fork()
            if pid == 0:
                selector.close()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for descriptor in (wake_read, wake_write):
                    os.close(descriptor)
                for held in channels:
                    held.close()
                # Every other service's output not yet handed to its child: a copy held here would keep that
                # service's pipe open after it ended, and its worker would never see the end of its output.
                for _, _, pending in [*ready, *staging.waiting]:
                    _close(pending)
                return _job(request, given)
            _close(given)
            children[pid] = channel
            _send(channel, {"pid": pid})
    selector.close()
    return None


def _job(request: dict[str, Any], descriptors: list[int]) -> Job:
    output, *direct = descriptors
    prefix = request.get("prefix")
    lines = (direct[0], Prefix(prefix["name"], prefix["colour"])) if direct and prefix is not None else None
    return Job(request["module"], request["environment"], request["cwd"], output, lines)


def _close(descriptors: list[int]) -> None:
    for descriptor in descriptors:
        os.close(descriptor)


def _drain(descriptor: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(descriptor, 512):
            pass


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        channel = children.pop(pid, None)
        if channel is not None:
            _send(channel, {"returncode": os.waitstatus_to_exitcode(status)})


def _send(channel: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # its worker is gone (killed with the launcher): nobody is left to tell
        channel.send(json.dumps(message).encode())


def become(job: Job) -> None:
    """Turn this forked child into `python -m <module>` as the launcher would have started it, then run it: its
    SystemExit and exceptions end the interpreter as they would there."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(job.output, 1)
    os.dup2(job.output, 2)
    os.close(job.output)
    if job.lines is not None:
        output, prefix = job.lines
        os.set_inheritable(output, False)  # what the service spawns writes where the service tells it
        coloured = os.isatty(output)  # honcho's Printer colours only on a terminal
        own = PrefixedLines(output, prefix, sys.stdout, coloured=coloured)
        errors = PrefixedLines(output, prefix, sys.stderr, coloured=coloured)
        sys.stdout, sys.stderr = own, errors
        atexit.register(own.end)
        atexit.register(errors.end)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.environment)
    name = job.module.encode()[:15]
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    sys.argv = ["-m"]  # what `python -m` holds until runpy puts the module's path there
    runpy.run_module(job.module, run_name="__main__", alter_sys=True)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    preload()
    message, descriptors, _, _ = socket.recv_fds(control, MESSAGE_BYTES, MOST_SERVICES)
    control.close()
    if not message:  # the launcher stopped before it planned the stack
        return
    schedule = Schedule.decode(message, descriptors)
    job = serve([socket.socket(fileno=descriptor) for descriptor in schedule.channels], schedule)
    if job is not None:
        become(job)


if __name__ == "__main__":
    main()
