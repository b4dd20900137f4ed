"""Where the embedded stack lives and listens: its home folder (`home`, SAIP_HOME: one launcher at a time, the secrets
kept there) and the gateway's address (`gateway.host`, `gateway.port`), read from the launcher's own keys and refused,
naming the key, before anything starts."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path

from saip.common.configuration import ConfigurationError, configured, env_name

LOCK_FILE = "saip-run.lock"  # held by the launcher for its life: one stack per SAIP_HOME
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8282


class StackError(Exception):
    """The stack cannot start; the message says what to change."""


@contextlib.contextmanager
def held(home: Path) -> Iterator[None]:
    """SAIP_HOME locked for this launcher, or a StackError that says who holds it: two stacks on one home would run
    two NATS servers on one JetStream store and two knowledge services on one Qdrant Edge folder. The lock goes with
    the launcher's process however it ends (the services it starts do not inherit it); the file keeps the holder's
    pid for the message."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        handle = (home / LOCK_FILE).open("a+", encoding="utf-8")
    except OSError as exc:
        reason = "a file, not a folder" if home.is_file() else exc.strerror or str(exc)
        raise StackError(
            f"SAIP_HOME {home} cannot be saip's folder ({reason}): set home (SAIP_HOME) to a folder "
            "saip may create and write in"
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise StackError(
                f"SAIP_HOME {home} is in use by another saip run (pid {holder}): stop it, or give this one a "
                "SAIP_HOME of its own"
            ) from None
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield


def home_of(env: Mapping[str, str]) -> Path:
    return Path(setting("home", env) or ".saip").resolve()


def setting(key: str, env: Mapping[str, str]) -> str | None:
    """A key the launcher reads itself, as text (the services validate the rest when they start); a list, which none
    of these keys takes, is refused naming the key, before anything starts."""
    value = configured(key, env)
    if isinstance(value, list | dict):
        raise ConfigurationError(
            f"{key} ({env_name(key)}) is a {type(value).__name__}; give it one value (docs/configuration.md)"
        )
    return None if value is None else str(value)


def gateway_address(env: Mapping[str, str]) -> tuple[str, int]:
    """Where the gateway listens (`gateway.host`, `gateway.port`: their variables, else saip.yaml), or the
    ConfigurationError that says the port is no port."""
    host = setting("gateway.host", env) or DEFAULT_HOST
    given = setting("gateway.port", env) or str(DEFAULT_PORT)
    try:
        port = int(given)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ConfigurationError(
            f"gateway.port (SAIP_GATEWAY_PORT) is {given!r}, not a port: give a number up to 65535, such as 8282"
        )
    return host, port


def free_to_listen(host: str, port: int) -> None:
    """Nothing, when the gateway can listen on `host` `port`; else the StackError that says which key to change (a
    port in use, an address that is not this machine's)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the gateway binds it: TIME_WAIT is free
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise StackError(
                    f"port {port} is in use (another saip?): stop it, or set gateway.port (SAIP_GATEWAY_PORT) to a "
                    "free port"
                ) from None
            raise StackError(
                f"the gateway cannot listen on {host} port {port} ({exc.strerror or exc}): set gateway.host "
                "(SAIP_GATEWAY_HOST) to an address of this machine, such as 127.0.0.1, and gateway.port "
                "(SAIP_GATEWAY_PORT) to a port it may take"
            ) from None


def url_of(host: str, port: int) -> str:
    """The URL that reaches a gateway listening on `host` `port`: a loopback host for every address, an IPv6 one in
    brackets."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def secret_file(path: Path, value: str | None = None) -> str:
    """Read a secret kept in SAIP_HOME, or create it (mode 0600) with `value` or a fresh random one."""
    if path.is_file():
        return path.read_text().strip()
    content = value or secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(content + "\n")
    return content
