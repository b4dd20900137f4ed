"""How `saip run` keeps its processes: honcho starts each one, reads its output and prints its lines (`Manager`,
`Process`, `Printer`), and this supervisor decides what an end means, as a container engine's restart policy does in
compose and k8s.

- Before the stack is ready (the gateway healthy, `ready` set by the launcher), a process that ends stops everything:
  a setting refused, a port taken, a service that cannot start is said at once, and the last line names it
  (`ended_line`).
- Once it is ready, a process that ends (a crash, a `kill -9`) is restarted after a backoff (`RESTART_FIRST` seconds,
  doubled for each end in a row up to `RESTART_MOST`), with the same command, ports and environment, so the gateway's
  channels and every service's NATS connection reconnect to it; what is left of its process group is killed first,
  as an engine kills a container's. The new instance is also given `SAIP_RESTARTS` (`launching.RESTARTS_ENV`), its
  count, which its heartbeat carries to `saip status` and `saip audit system`. Its lines say so: `tools was killed by
  SIGKILL; restarting it in 1 s (restart 1)`, then honcho's `tools started (pid=N)`. The others go on serving
  meanwhile.
- An instance that ran `STEADY_AFTER` seconds ended on its own; one that ends sooner, `CRASH_LOOP` times in a row,
  is a crash loop, and stops everything as an end before ready does.
- Ctrl-C or SIGTERM stops everything: SIGTERM to every process but NATS, then NATS once they have stopped (a
  service's stop still speaks to NATS: it drains its subscriptions and flushes what it publishes) or `NATS_LAST_WITHIN`
  seconds later, then SIGKILL for what is left `KILL_WAIT` seconds after the first SIGTERM. A restart that was due is
  called off; one under way is stopped as soon as it has started.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from honcho.manager import KILL_WAIT, SIGNALS, Manager
from honcho.printer import Message

from saip.cli.lines import Prefix
from saip.common import processes
from saip.common.launching import RESTARTS_ENV

NATS = "nats"
RESTART_FIRST = 1.0  # seconds before a service that ended is started again
RESTART_MOST = 30.0  # the longest the backoff grows to
STEADY_AFTER = 60.0  # an instance that ran this long ended on its own, not in a crash loop
CRASH_LOOP = 5  # restarts in a row whose instance ended within STEADY_AFTER, after which the next end stops the stack
# NATS's SIGTERM comes at the latest this long after the services' own, so that it stops cleanly before the SIGKILL of
# whatever is left (KILL_WAIT after the first SIGTERM).
NATS_LAST_WITHIN = KILL_WAIT - 1.5
TICK = 0.1  # how often the loop looks at what is due when no line or event comes


def backoff(in_a_row: int) -> float:
    """The wait before the `in_a_row`-th restart of a series (1, 2, 4 ... seconds, at most RESTART_MOST)."""
    return float(min(RESTART_FIRST * 2 ** (in_a_row - 1), RESTART_MOST))


def restarting_line(name: str, code: int, delay: float, count: int) -> str:
    return f"{name} {processes.ended(code)}; restarting it in {delay:g} s (restart {count})"


def ended_line(ended: tuple[str, int], ready: bool, *, crash_loop: bool = False) -> str:
    """The launcher's last line when a process's own end stopped the stack: which, how, and where to look; the
    lines before it are the other processes stopping, so the reason would be far above otherwise."""
    name, code = ended
    how = processes.ended(code)
    if not ready:
        return f"saip run: {name} {how} before saip was ready (its lines above say why); everything else was stopped."
    if crash_loop:
        return (
            f"saip run: {name} {how} again after {CRASH_LOOP} restarts in a row, each within {STEADY_AFTER:g} s of "
            "its start (its lines above say why); everything else was stopped."
        )
    return f"saip run: {name} {how}; everything else was stopped."


@dataclass
class Kept:
    """What the supervisor knows of one process beyond honcho's record of it."""

    environment: dict[str, str]  # as planned: a restart adds only its count
    restarts: int = 0  # since the launcher started
    in_a_row: int = 0  # restarts whose instance ended within STEADY_AFTER of its start
    since: float = 0.0  # when the running instance started (monotonic)
    due: float | None = None  # when its restart is due, while it waits for one
    last_code: int = 0
    stop_on_start: bool = False  # started again while the stack stops: stopped as soon as its pid is known


class Supervisor(Manager):  # type: ignore[misc]  # honcho ships no type hints
    """honcho's Manager with the restart policy above and NATS stopped last. `ready` is set by the launcher once the
    stack serves; `ended_first` is the process whose own end stopped the stack, and how it ended."""

    def __init__(self, printer: Any = None) -> None:
        super().__init__(printer)
        self.ready = threading.Event()
        self.ended_first: tuple[str, int] | None = None
        self.crash_loop = False
        self._kept: dict[str, Kept] = {}

    def add_process(self, name: str, cmd: str, quiet: bool = False, env: Any = None, cwd: Any = None) -> Any:
        added = super().add_process(name, cmd, quiet=quiet, env=env, cwd=cwd)
        self._kept[name] = Kept(dict(added.env))
        return added

    def restarts(self, name: str) -> int:
        return self._kept[name].restarts

    def lines(self, name: str) -> tuple[int, Prefix]:
        """Where honcho prints (the launcher's output) and what it puts before the lines of process `name`, once every
        process is added: where, and how, a forked service writes its own lines."""
        return self._printer.output.fileno(), Prefix(
            name.ljust(self._printer.width), self._processes[name]["obj"].colour
        )

    def loop(self) -> None:
        """Start every process, print their lines, restart or stop as the policy says, until every one has stopped
        for good."""

        def stop(signum: int, frame: FrameType | None) -> None:
            self._system_print(f"{SIGNALS[signum]['name']} received\n")
            self.returncode = SIGNALS[signum]["rc"]
            self.terminate()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        now = time.monotonic()
        for kept in self._kept.values():
            kept.since = now
        self._start()
        stopping_since: float | None = None
        killed = False
        while True:
            self._restart_due()
            try:
                message = self.events.get(timeout=TICK)
            except queue.Empty:
                if self._all_ended():
                    return
            else:
                self._handle(message)
            if self._terminating and stopping_since is None:
                stopping_since = time.monotonic()
            if not killed and stopping_since is not None and time.monotonic() - stopping_since > KILL_WAIT:
                killed = True
                self.kill()

    def _handle(self, message: Message) -> None:
        name = message.name
        if message.type == "line":
            self._printer.write(message)
        elif message.type == "start":
            self._started(name, message.data["pid"])
        elif message.type == "stop":
            self._stopped(name, message.data["returncode"])

    def _started(self, name: str, pid: int) -> None:
        process, kept = self._processes[name], self._kept[name]
        process["pid"] = pid
        kept.since = time.monotonic()
        self._system_print(f"{name} started (pid={pid})\n")
        if kept.stop_on_start:  # restarted just as the stack began to stop
            kept.stop_on_start = False
            self._system_print(f"sending SIGTERM to {name} (pid {pid})\n")
            self._procmgr.terminate(pid)

    def _stopped(self, name: str, code: int) -> None:
        process, kept = self._processes[name], self._kept[name]
        process["returncode"] = code
        kept.last_code = code
        self._system_print(f"{name} stopped (rc={code})\n")
        self._procmgr.kill(process["pid"])  # what is left of its process group (a service's own children)
        if self._terminating:
            return
        if not self.ready.is_set():
            self._stop_for(name, code)
            return
        ran = time.monotonic() - kept.since
        kept.in_a_row = kept.in_a_row + 1 if ran < STEADY_AFTER else 1
        if kept.in_a_row > CRASH_LOOP:
            self.crash_loop = True
            self._stop_for(name, code)
            return
        delay = backoff(kept.in_a_row)
        kept.due = time.monotonic() + delay
        self._system_print(restarting_line(name, code, delay, kept.restarts + 1) + "\n")

    def _stop_for(self, name: str, code: int) -> None:
        """A process's own end stops the stack."""
        self.ended_first = (name, code)
        if self.returncode is None:
            self.returncode = code
        self.terminate()

    def _restart_due(self) -> None:
        now = time.monotonic()
        for name, kept in self._kept.items():
            if kept.due is None or kept.due > now or self._terminating:
                continue
            kept.due = None
            kept.restarts += 1
            process = self._processes[name]
            del process["pid"], process["returncode"]
            if name != NATS:  # NATS reads no saip setting
                process["obj"].env = {**kept.environment, RESTARTS_ENV: str(kept.restarts)}
            worker = multiprocessing.Process(name=name, target=process["obj"].run, args=(self.events, True))
            process["process"] = worker
            worker.start()

    def _all_ended(self) -> bool:
        """Every process has stopped and none waits for a restart (one being restarted has neither pid nor code)."""
        waiting = any(kept.due is not None for kept in self._kept.values())
        return not waiting and all("returncode" in process for process in self._processes.values())

    def _killall(self, force: bool = False) -> None:
        for name, kept in self._kept.items():
            if kept.due is not None:  # a restart that was due is called off: it stays stopped
                kept.due = None
                self._processes[name]["returncode"] = kept.last_code
        running = {name: process for name, process in self._processes.items() if "returncode" not in process}
        for name, process in running.items():
            if "pid" not in process:  # its worker is starting it: stopped once its pid is known
                self._kept[name].stop_on_start = True
        nats = running.get(NATS)
        targets = [name for name, process in running.items() if "pid" in process and (force or name != NATS)]
        for name in targets:
            pid = self._processes[name]["pid"]
            self._system_print(f"sending {'SIGKILL' if force else 'SIGTERM'} to {name} (pid {pid})\n")
            (self._procmgr.kill if force else self._procmgr.terminate)(pid)
        if not force and nats is not None and "pid" in nats:
            threading.Thread(target=self._stop_nats_last, args=(nats,), name="nats-last", daemon=True).start()

    def _stop_nats_last(self, nats: dict[str, Any]) -> None:
        deadline = time.monotonic() + NATS_LAST_WITHIN
        while time.monotonic() < deadline and any(
            "returncode" not in process for name, process in list(self._processes.items()) if name != NATS
        ):
            time.sleep(0.05)
        if "returncode" not in nats:
            self._system_print(f"sending SIGTERM to {NATS} (pid {nats['pid']})\n")
            self._procmgr.terminate(nats["pid"])
