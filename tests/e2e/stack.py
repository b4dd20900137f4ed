"""The whole stack started exactly as `make run` starts it (`saip run`), with the chat's model scripted when a test
asks the chat (tests/model_server.py), and the clients the e2e tests use."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from saip.common.natsd import free_port
from tests.model_server import MODEL, ScriptedModel, scripted_model

SAIP = Path(sys.executable).parent / "saip"
# How long a start may take before it fails with the stack's log tail: shorter than pytest's timeout (120 s, in
# pyproject.toml), with room left to stop the stack and say why, so a slow start is never a bare pytest timeout.
READY_WITHIN = 75.0
# How long the launcher gets to stop everything after SIGTERM (honcho SIGKILLs what is left after 5 s); past it the
# whole process group is killed, and `stop` says so.
STOP_WITHIN = 30.0
BANNER = re.compile(r"^(Console|MCP endpoint|MCP bearer token|Admin token): (.+)$")
METRICS = re.compile(r"^Metrics: (.+)$")
E2E_CLIENT = types.Implementation(name="e2e-client", version="1.0")


@dataclass
class Stack:
    home: Path
    port: int
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    banner: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)  # service -> its /metrics URL, as the banner says
    settled: threading.Event = field(default_factory=threading.Event)  # the banner is out, or the launcher is gone
    reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def console_url(self) -> str:
        """The console's address as the banner prints it (what a person opens)."""
        return self.banner["Console"].split(" ", 1)[0]

    @property
    def mcp_url(self) -> str:
        return self.banner["MCP endpoint"]

    @property
    def admin_token(self) -> str:
        return self.banner["Admin token"]

    @property
    def mcp_token(self) -> str:
        return self.banner["MCP bearer token"]

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.admin_token}"}, timeout=10)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            self.lines.append(line)
            listed = METRICS.match(line)
            for entry in listed.group(1).split(", ") if listed else []:
                service, url = entry.split(" ", 1)
                self.metrics[service] = url
            match = BANNER.match(line)
            if match:
                self.banner[match.group(1)] = match.group(2)
                if self.ready:
                    self.settled.set()
        self.settled.set()

    @property
    def ready(self) -> bool:
        return len(self.banner) == 4

    def descendants(self) -> list[int]:
        """Every process the launcher started, at any depth (read from /proc)."""
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        found, frontier = [], [self.process.pid]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, ppid in parents.items() if ppid == parent]
            found.extend(children)
            frontier.extend(children)
        return found

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, within: float = STOP_WITHIN) -> bool:
        """SIGTERM the launcher as a person's Ctrl-C would and wait for it to exit; returns whether it stopped by
        itself within `within` seconds (otherwise its whole process group was killed)."""
        stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=within)
            except subprocess.TimeoutExpired:
                stopped = False
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.reader is not None:
            self.reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return stopped


def start_stack(home: Path, *, env: dict[str, str] | None = None, ready_within: float = READY_WITHIN) -> Stack:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("SAIP_") and key != "PYTEST_CURRENT_TEST"
    }
    # The tests' MCP clients answer questions by program, at once: as the person (management.min-answer-ms off).
    at_once = {"SAIP_MANAGEMENT_MIN_ANSWER_MS": "0"}
    environment.update({"SAIP_HOME": str(home), "SAIP_GATEWAY_PORT": str(port), **at_once, **(env or {})})
    process = subprocess.Popen(
        [str(SAIP), "run"],
        env=environment,
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    stack = Stack(home, port, process)
    stack.reader = threading.Thread(target=stack._read, daemon=True)
    stack.reader.start()
    stack.settled.wait(ready_within)
    if not stack.ready:
        exited = process.poll()
        stack.stop()
        tail = "\n".join(stack.lines[-40:])
        why = f"exited with {exited}" if exited is not None else f"did not print its banner within {ready_within:g} s"
        raise AssertionError(f"the stack {why}:\n{tail}")
    return stack


@dataclass
class ChatStack:
    stack: Stack
    model: ScriptedModel  # each test extends its steps with its own script


@contextmanager
def chat_stack(home: Path, env: dict[str, str]) -> Iterator[ChatStack]:
    """A stack whose chat asks the scripted model (chat.base-url and chat.model set), with `env` besides."""
    with (
        scripted_model() as model,
        start_stack(home, env={"SAIP_CHAT_BASE_URL": model.url, "SAIP_CHAT_MODEL": MODEL, **env}) as running,
    ):
        yield ChatStack(running, model)


def process_name(pid: int) -> str | None:
    """The stack's name for one of its processes: a Python service's module under saip (`gateway`,
    `sandbox.worker`), `nats-server`, `fork server`; None for honcho's workers, the shells and a process gone."""
    try:
        words = [word.decode(errors="replace") for word in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
        forked = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    if words and words[0].endswith("nats-server"):
        return "nats-server"
    if "-m" not in words or words.index("-m") + 1 == len(words):
        return None
    module = words[words.index("-m") + 1]
    if module == "saip.cli.zygote":  # the fork server, or a service it forked (named after its module, saip.<name>)
        return forked.removeprefix("saip.") if forked.startswith("saip.") else "fork server"
    return module.removeprefix("saip.") if module.startswith("saip.") else None


@asynccontextmanager
async def mcp_client(
    url: str,
    token: str | None,
    *,
    mode: str = "auto",
    client_info: types.Implementation = E2E_CLIENT,
    **kwargs: Any,
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, client_info=client_info, **kwargs) as client,
    ):
        yield client
