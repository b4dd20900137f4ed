"""The local target: each shipped server a supervised child process of this service (`python -m saip.shipped`).

Its output is kept, masked (its token and the values of its requirements, plus every pattern `Masker` knows), in a
bounded ring of lines. A process that exits while it should run is started again after a backoff (0.5 s doubling to
10 s); after `restart_limit` crashes in a row it stays down, `failed`, with its last lines as the reason. A start
that does not answer its health check within `READY_WITHIN` seconds is a failure too. A stdio server is not a
process of the shipyard (its client starts it): it is only unpacked, and its endpoint is the command to run.
A server stops when its stdin closes (`--stop-with-stdin`), so none outlives a shipyard killed by SIGKILL.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
from anyio.abc import Process, TaskGroup

from saip.common.masking import Masker
from saip.common.processes import ChunkLines
from saip.shipyard.metrics import ShipyardMetrics

logger = logging.getLogger(__name__)

READY_WITHIN = 60.0
STOP_WITHIN = 5.0
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 10.0
LOCAL = "local"


def runtime_command(bundle_file: Path, port: int | None) -> list[str]:
    """The runtime's command line: over HTTP on 127.0.0.1:`port` as this service's child, or (None) the stdio
    command its client starts."""
    command = [sys.executable, "-m", "saip.shipped", "--bundle", str(bundle_file)]
    if port is None:
        return command
    # Its stdin is a pipe this process holds, closed when the shipyard dies, even by SIGKILL.
    return [*command, "--host", "127.0.0.1", "--port", str(port), "--stop-with-stdin"]


@dataclass
class LocalServer:
    """One supervised server and what status shows of it."""

    name: str
    version: int
    argv: list[str]
    env: dict[str, str]
    port: int
    masker: Masker
    lines: deque[str]
    state: str = "starting"
    restarts: int = 0
    last_error: str = ""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    stopping: bool = False
    settled: anyio.Event = field(default_factory=anyio.Event)  # running, or failed: the first start is decided
    wake: anyio.Event = field(default_factory=anyio.Event)  # a stop cuts the backoff short
    process: Process | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log(self, line: str) -> None:
        self.lines.append(self.masker.text(line.rstrip("\n")))


class LocalRuns:
    """The supervised servers of this process; their tasks run in the service's background group."""

    def __init__(self, group: TaskGroup, metrics: ShipyardMetrics, *, log_lines: int, restart_limit: int) -> None:
        self._group = group
        self._metrics = metrics
        self._log_lines = log_lines
        self._restart_limit = restart_limit
        self._servers: dict[str, LocalServer] = {}

    def get(self, name: str) -> LocalServer | None:
        return self._servers.get(name)

    def running(self) -> int:
        return sum(1 for server in self._servers.values() if server.state in ("running", "restarting", "starting"))

    async def start(
        self, name: str, version: int, argv: list[str], port: int, env: Mapping[str, str], secrets: list[str]
    ) -> LocalServer:
        """Start `argv` (`runtime_command`) and wait until it answers its health check on `port`, or fails to (then
        it is removed)."""
        server = LocalServer(
            name=name,
            version=version,
            argv=argv,
            env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
            port=port,
            masker=Masker(secrets),
            lines=deque(maxlen=self._log_lines),
        )
        self._servers[name] = server
        self._group.start_soon(self._supervise, server)
        await server.settled.wait()
        if server.state == "failed":
            await self.stop(name)
            self._servers.pop(name, None)
        self._gauge()
        return server

    async def stop(self, name: str) -> None:
        server = self._servers.get(name)
        if server is None:
            return
        server.stopping = True
        server.wake.set()
        if server.process is not None and server.process.returncode is None:
            server.process.terminate()
        with anyio.move_on_after(STOP_WITHIN):
            await server.done.wait()
        if not server.done.is_set() and server.process is not None:
            server.process.kill()  # it did not stop on SIGTERM within STOP_WITHIN
            await server.done.wait()
        server.state = "stopped"
        self._gauge()

    def forget(self, name: str) -> None:
        self._servers.pop(name, None)

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            for name in list(self._servers):
                await self.stop(name)

    def _gauge(self) -> None:
        self._metrics.running.labels(LOCAL).set(self.running())

    async def _supervise(self, server: LocalServer) -> None:
        backoff = FIRST_BACKOFF
        try:
            while not server.stopping:
                code = await self._once(server)
                if server.stopping:
                    return
                server.restarts += 1
                server.last_error = f"the process exited with code {code}: {self._tail(server)}"
                logger.warning("shipped server exited", extra={"server": server.name, "code": code})
                if not server.settled.is_set() or server.restarts > self._restart_limit:
                    server.state = "failed"
                    server.settled.set()
                    self._gauge()
                    return
                self._metrics.restarts.inc()
                server.state = "restarting"
                with anyio.move_on_after(backoff):
                    await server.wake.wait()
                backoff = min(backoff * 2, MAX_BACKOFF)
        finally:
            server.done.set()

    async def _once(self, server: LocalServer) -> int:
        """One life of the process: started, watched until healthy, read until it exits; its exit code."""
        async with await anyio.open_process(
            server.argv, env=server.env, stdout=-1, stderr=-2, start_new_session=True
        ) as process:
            server.process = process
            server.started_at = datetime.now(UTC)
            async with anyio.create_task_group() as group:
                group.start_soon(self._read, server, process)
                group.start_soon(self._ready, server, process)
                code = await process.wait()
                group.cancel_scope.cancel()
            return code

    async def _read(self, server: LocalServer, process: Process) -> None:
        assert process.stdout is not None
        lines = ChunkLines()
        async for chunk in process.stdout:
            for line in lines.feed(chunk):
                server.log(line)
        for line in lines.end():
            server.log(line)

    async def _ready(self, server: LocalServer, process: Process) -> None:
        url = f"http://127.0.0.1:{server.port}/healthz"
        with anyio.move_on_after(READY_WITHIN) as scope:
            async with httpx.AsyncClient(timeout=2.0) as client:
                while process.returncode is None:
                    try:
                        if (await client.get(url)).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await anyio.sleep(0.1)
        if scope.cancelled_caught:
            server.log(f"no answer on {url} within {READY_WITHIN:.0f} s; stopping it")
            process.terminate()
            return
        if process.returncode is None:
            server.state = "running"
            server.settled.set()
            self._gauge()

    async def withheld(self, name: str) -> list[str]:
        """The upstream members the running server withholds now (`member: reason`), as its own /healthz says; none
        when it does not answer within a second (its state says why)."""
        server = self._servers.get(name)
        if server is None or server.state != "running":
            return []
        try:
            async with httpx.AsyncClient(timeout=1.0) as client:
                health = (await client.get(f"http://127.0.0.1:{server.port}/healthz")).json()
            return [f"{member['name']}: {member['reason']}" for member in health.get("withheld", [])]
        except (httpx.HTTPError, ValueError):
            return []

    @staticmethod
    def _tail(server: LocalServer) -> str:
        return " | ".join(list(server.lines)[-3:]) or "no output"
