"""The launcher's side of `saip run`'s fork server (`saip.cli.zygote`, the fork side, says what it guarantees): it
starts the zygote, gives it its schedule, and asks it for each service's process from honcho's worker for that
service (`Forked`, which honcho drives as it drives a Popen).

The protocol. The launcher starts the zygote first of all (`ForkServer`, from `saip.cli.launch` before click, the
commands or honcho are imported and before it plans the stack), so the shared set is imported while the launcher
plans; its one argument is a control socket's descriptor. Once the launcher has planned, it sends one message on it
(`ForkServer.schedule`): a JSON `Schedule` (the module each service's channel will ask for, and the later stages: it
imports only those some service needs) carrying one SOCK_SEQPACKET socket a service, whose other end honcho's worker
for that service holds (inherited: honcho starts its workers with multiprocessing's fork, Python 3.11's default on
Linux, and a restarted service's new worker inherits it the same way); a launcher that stops before it planned (a
port in use, say) closes the control socket, and the zygote exits. A request is one JSON message (module,
environment, working directory, and the prefix when the child writes its lines itself) carrying the pipe's write end
(and then the launcher's output after it); the zygote forks, answers `{"pid": N}`, and `{"returncode": N}` once it
has reaped the child (negative: the signal that ended it, as subprocess says), or `{"refused": why}` when it forks
nothing more. The zygote exits once every channel is closed (the launcher and its workers are gone) and every child
it forked has been reaped.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from saip.cli.lines import Prefix
from saip.common.launching import BASIC_PREFIXES, BASIC_VARIABLES, TRACING_PREFIX


@dataclass(frozen=True)
class Stage:
    """What the zygote imports after the shared set, and the services (by module) it forks only once that is in."""

    imports: tuple[str, ...]
    services: tuple[str, ...]


# Found as the zygote's SHARED was, between pairs of services: what the tools service and the gateway both import
# beyond the shared set (`python -X importtime`; what the gateway shares with the audit, knowledge and shipyard services
# beyond it is under 0.1 s, not worth their waiting). Each stage is imported with everything before it.
STAGES = (Stage(("mcp_types", "httpx2", "saip.common.approval_sentences"), ("saip.tools", "saip.gateway")),)
# A request's largest size: a service's environment is a few kilobytes.
MESSAGE_BYTES = 1 << 20
# The most channels a schedule carries: one a service, far more than saip has.
MOST_SERVICES = 64
# How long the fork server gets to exit once every service has stopped and the launcher let go of its channels.
STOP_WITHIN = 5.0


@dataclass(frozen=True)
class Schedule:
    """The zygote's argument: the module each channel (by descriptor) will ask for, and the stages after the shared
    set."""

    channels: dict[int, str]
    stages: tuple[Stage, ...] = STAGES

    def encode(self) -> bytes:
        """The message, sent with the channels' descriptors in the same order as its modules."""
        stages = [{"imports": stage.imports, "services": stage.services} for stage in self.stages]
        return json.dumps({"modules": list(self.channels.values()), "stages": stages}).encode()

    @classmethod
    def decode(cls, message: bytes, descriptors: list[int]) -> Schedule:
        given = json.loads(message)
        stages = tuple(Stage(tuple(stage["imports"]), tuple(stage["services"])) for stage in given["stages"])
        return cls(dict(zip(descriptors, given["modules"], strict=True)), stages)

    def stage_of(self, module: str) -> int:
        """The stages a service waits for: 0 for the shared set alone, n for the n-th later stage."""
        return next((number for number, stage in enumerate(self.stages, 1) if module in stage.services), 0)

    def needed(self) -> tuple[Stage, ...]:
        """The later stages to import: up to the last one a service that will ask needs (each needs those before)."""
        return self.stages[: max((self.stage_of(module) for module in self.channels.values()), default=0)]


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The fork server's environment: what `launching.launch_environment` gives every service of the launcher's
    alike (the basics and OTEL_*), with the unbuffered output `saip run` gives each (a child keeps the zygote's
    `sys.stdout`, made at the interpreter's start)."""
    given = {
        name: value
        for name, value in environ.items()
        if name in BASIC_VARIABLES or name.startswith((*BASIC_PREFIXES, TRACING_PREFIX))
    }
    return {**given, "PYTHONUNBUFFERED": "1"}


class ForkServer:
    """The running zygote, started before the launcher plans the stack, and the launcher's end of each forked
    service's channel once `schedule` has made them (inherited by honcho's worker for that service, which makes the
    request)."""

    def __init__(self, cwd: str, environ: Mapping[str, str]) -> None:
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channels: dict[str, socket.socket] = {}
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "saip.cli.zygote", str(theirs.fileno())],
                env=environment(environ),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                start_new_session=True,  # a terminal's Ctrl-C is the launcher's to handle, as for every service
            )

    def schedule(self, forked: Mapping[str, str], stages: tuple[Stage, ...] = STAGES) -> None:
        """Give the zygote one channel for each service it will fork (name -> module), and the stages."""
        pairs = {name: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for name in forked}
        self.channels = {name: pair[0] for name, pair in pairs.items()}
        theirs = {pair[1].fileno(): forked[name] for name, pair in pairs.items()}
        # A zygote already gone answers no request: each service then starts as its own interpreter (`NotForked`).
        with contextlib.suppress(OSError):
            socket.send_fds(self._control, [Schedule(theirs, stages).encode()], list(theirs))
        self._control.close()
        for _, held in pairs.values():
            held.close()

    def stop(self) -> None:
        """Let go of the channels (the zygote exits once it has reaped every service), then wait for it. One never
        given a schedule has forked nothing: it is ended at once rather than waited for through its imports."""
        self._control.close()
        for channel in self.channels.values():
            channel.close()
        if not self.channels:
            self.process.terminate()
        try:
            self.process.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class NotForked(Exception):
    """The zygote did not fork a service: it is gone (it exited, or was killed), or it forks nothing more."""


class Forked:
    """A service forked by the zygote, as honcho's Process drives a Popen: `pid`, `stdout`, `wait()`, `returncode`.
    Made in the launcher's worker for that service, which reads its output and waits for it. Given `lines` (the
    launcher's output and the prefix), the service writes its own lines there, and `stdout` carries only the rest."""

    def __init__(
        self,
        channel: socket.socket,
        module: str,
        environment: dict[str, str],
        cwd: str,
        lines: tuple[int, Prefix] | None = None,
    ) -> None:
        read, write = os.pipe()
        given: dict[str, Any] = {"module": module, "environment": environment, "cwd": cwd}
        descriptors = [write]
        if lines is not None:
            output, prefix = lines
            given["prefix"] = {"name": prefix.name, "colour": prefix.colour}
            descriptors.append(output)
        request = json.dumps(given).encode()
        try:
            socket.send_fds(channel, [request], descriptors)
            reply = channel.recv(MESSAGE_BYTES)
        except OSError as exc:
            os.close(read)
            raise NotForked(f"the fork server did not take the request for {module}: {exc}") from exc
        finally:
            os.close(write)
        answer: dict[str, Any] = json.loads(reply) if reply else {"refused": "it exited first"}
        if "refused" in answer:
            os.close(read)
            raise NotForked(f"the fork server did not fork {module}: {answer['refused']}")
        self.pid: int = answer["pid"]
        self.stdout = os.fdopen(read, "rb")
        self.returncode: int | None = None
        self._channel = channel

    def wait(self) -> int:
        """The child's exit code once the zygote has reaped it (honcho calls this after its output ended). Without
        the zygote nobody can know it: 1, said on stderr."""
        if self.returncode is None:
            reply = self._channel.recv(MESSAGE_BYTES)
            if reply:
                self.returncode = json.loads(reply)["returncode"]
            else:
                print(f"saip run: the fork server is gone, so {self.pid}'s exit code is unknown: 1", file=sys.stderr)
                self.returncode = 1
        return self.returncode
