"""Starting the test upstreams (`tests.upstreams.server`) as processes, and the tool definitions they serve."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from saip.common.natsd import free_port
from saip.v1 import upstream_pb2

ROOT = Path(__file__).resolve().parents[2]


def tool(name: str, description: str = "", **annotations: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string", "description": "what to send"}}}
    definition: dict[str, Any] = {"name": name, "description": description or f"The {name} tool."}
    definition["inputSchema"] = schema
    if annotations:
        definition["annotations"] = annotations
    return definition


ECHO = tool("echo", "Echo the arguments back.", readOnlyHint=True, openWorldHint=False)


@dataclass
class Upstream:
    """One running test upstream: its tools file (rewrite it to change what it lists) and how to register it."""

    tools_file: Path
    url: str = ""

    def write(self, tools: list[dict[str, Any]]) -> None:
        """Replace what the upstream lists, at once: the server reads the file at every listing, and a file written
        in place can be read empty between its truncation and its write (a listing then fails: 'Internal server
        error', and the server's connection is FAILED)."""
        written = self.tools_file.with_name(self.tools_file.name + ".new")
        written.write_text(json.dumps(tools), encoding="utf-8")
        os.replace(written, self.tools_file)

    def listings(self) -> int:
        """How many times the upstream has listed its tools so far."""
        listed = self.tools_file.with_name(self.tools_file.name + ".listed")
        return len(listed.read_text(encoding="utf-8").splitlines()) if listed.exists() else 0

    def server(self, server_id: str, transport: upstream_pb2.Transport, **fields: Any) -> upstream_pb2.Server:
        return upstream_pb2.Server(
            id=server_id, transport=transport, url=self.url, docs_url="https://example.com/docs", **fields
        )


def stdio_server(server_id: str, tools_file: Path, *, mode: str = "stdio", **fields: Any) -> upstream_pb2.Server:
    """A stdio upstream (`mode`: `stdio`, or `noisy`): the tools service starts it itself."""
    return upstream_pb2.Server(
        id=server_id,
        transport=upstream_pb2.TRANSPORT_STDIO,
        command=sys.executable,
        args=["-m", "tests.upstreams.server", mode, str(tools_file)],
        docs_url="https://example.com/docs",
        **fields,
    )


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def started(transport: str, tools_file: Path, tools: list[dict[str, Any]]) -> Iterator[Upstream]:
    """An HTTP or SSE upstream process on a free port, serving `tools` (rewritable through the returned handle)."""
    upstream = Upstream(tools_file)
    upstream.write(tools)
    port = free_port()
    path = "/sse" if transport == "sse" else "/mcp"
    upstream.url = f"http://127.0.0.1:{port}{path}"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.upstreams.server", transport, str(tools_file), str(port)], cwd=ROOT
    )
    try:
        for _ in range(400):  # bounded: 20 s at most
            if _listening(port):
                break
            if process.poll() is not None:
                raise RuntimeError(f"the test upstream exited with {process.returncode}")
            time.sleep(0.05)
        else:
            raise RuntimeError(f"the test upstream did not listen on {port} within 20 s")
        yield upstream
    finally:
        process.terminate()
        process.wait(timeout=10)
