"""`python -m saip.shipped --bundle <saip-bundle.json>`: serve one bundle as a standalone MCP server until SIGTERM or
SIGINT (or, over stdio, until the client closes stdin).

Over streamable HTTP it listens on `--host`/`--port` (SAIP_SHIPPED_HOST, SAIP_SHIPPED_PORT) and needs its bearer
token in SAIP_SHIPPED_TOKEN; over stdio it speaks on stdin/stdout and logs to stderr. A tool with HITL on waits
`--approval-wait` s (SAIP_SHIPPED_APPROVAL_SECONDS) for the person's answer, and takes an answer sooner than
`--min-answer-ms` (SAIP_SHIPPED_MIN_ANSWER_MS) as the client's own; each upstream server of an exposed member
is listed again every `--upstream-refresh` s (SAIP_SHIPPED_UPSTREAM_REFRESH_SECONDS) and on its list_changed. The
bundle's hashes are checked before anything opens: a bundle that fails them, or a requirement that is unset, is one
log line and exit 1. With `--stop-with-stdin` (how the shipyard's local target runs it) a server over streamable HTTP
stops as on SIGTERM once its stdin closes: the shipyard holds the other end of that pipe, so the kernel closes it when
the shipyard dies, even by SIGKILL, and no server outlives the process that supervises it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import uvicorn
from mcp.server.stdio import stdio_server

from saip.common import lifecycle, logs
from saip.common.approval_form import MIN_ANSWER_SECONDS
from saip.common.http_serving import HttpServer, listening
from saip.shipped import bundle as bundles
from saip.shipped.approval import WAIT_SECONDS, Gate
from saip.shipped.bundle import BUNDLE_FILE, STDIO, TRANSPORTS, BundleInvalid
from saip.shipped.server import (
    UPSTREAM_REFRESH_SECONDS,
    CannotServe,
    ShippedServer,
    build,
    checked_token,
    http_app,
    opened,
)

logger = logging.getLogger("saip.shipped")
DRAIN_SECONDS = 3

T = TypeVar("T")


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m saip.shipped", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True, type=Path, help="the saip-bundle.json (or the folder holding it)")
    parser.add_argument("--transport", choices=TRANSPORTS, help="the bundle's transport when not given")
    parser.add_argument("--host", default=_env("SAIP_SHIPPED_HOST", str, "127.0.0.1"))
    parser.add_argument("--port", type=int, default=_env("SAIP_SHIPPED_PORT", int, 8383))
    parser.add_argument(
        "--allowed-hosts",
        default=_env("SAIP_SHIPPED_ALLOWED_HOSTS", str, "127.0.0.1:*,localhost:*"),
        help="Host headers accepted (DNS-rebinding protection); '*' accepts any, for a container behind a Service",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        default=os.environ.get("SAIP_SHIPPED_STATELESS", "") == "true",
        help="serve 2025-11-25 clients without sessions, so replicas need no affinity",
    )
    parser.add_argument(
        "--approval-wait",
        type=float,
        default=_env("SAIP_SHIPPED_APPROVAL_SECONDS", float, WAIT_SECONDS),
        help="seconds the person has to answer the approval question of a tool with HITL on",
    )
    parser.add_argument(
        "--min-answer-ms",
        type=int,
        default=_env("SAIP_SHIPPED_MIN_ANSWER_MS", int, round(MIN_ANSWER_SECONDS * 1000)),
        help="an approval answer sooner than this after its question is the client's own, and the call is denied",
    )
    parser.add_argument(
        "--upstream-refresh",
        type=float,
        default=_env("SAIP_SHIPPED_UPSTREAM_REFRESH_SECONDS", float, UPSTREAM_REFRESH_SECONDS),
        help="seconds between two listings of an upstream server (a changed definition is withheld from then on)",
    )
    parser.add_argument(
        "--stop-with-stdin",
        action="store_true",
        help="stop as on SIGTERM when stdin closes (for a parent that holds the pipe: the shipyard's local target)",
    )
    return parser.parse_args(argv)


def _env(variable: str, read: Callable[[str], T], default: object) -> T:
    """An option's default: its variable when set, else `default`, read as the option reads what is typed."""
    return read(os.environ.get(variable, str(default)))


@asynccontextmanager
async def lifespan(options: argparse.Namespace) -> AsyncIterator[None]:
    bundle = bundles.read(options.bundle)
    transport = options.transport or bundle.transport
    with tempfile.TemporaryDirectory(prefix="saip-shipped-") as work:
        token = None if transport == STDIO else checked_token(os.environ.get("SAIP_SHIPPED_TOKEN"))
        async with opened(bundle, Path(work), os.environ, refresh=options.upstream_refresh) as served:
            server = build(served, gate=Gate(options.approval_wait, options.min_answer_ms / 1000), token=token)
            said = {"server": bundle.name, "version": bundle.version, "tools": len(served.tools)}
            if token is None:
                async with over_stdio(server):
                    logger.info("shipped server serving", extra={**said, "transport": transport})
                    yield
                return
            hosts = [host.strip() for host in options.allowed_hosts.split(",") if host.strip()]
            app = http_app(server, served, token, hosts, stateless=options.stateless)
            with listening(options.host, options.port, "pass --port (SAIP_SHIPPED_PORT)") as sock:
                config = uvicorn.Config(
                    app, log_config=None, access_log=False, timeout_graceful_shutdown=DRAIN_SECONDS, lifespan="off"
                )
                http = HttpServer(config)
                async with server.session_manager.run(), anyio.create_task_group() as group:
                    group.start_soon(http.serve, [sock])
                    await http.listening.wait()
                    logger.info("shipped server serving", extra={**said, "transport": transport, "port": options.port})
                    yield
                    http.should_exit = True


@asynccontextmanager
async def over_stdio(server: ShippedServer) -> AsyncIterator[None]:
    async with stdio_server() as (read, write), anyio.create_task_group() as group:

        async def speak() -> None:
            await server.run(read, write, server.create_initialization_options())
            # stdin closed: the client went away. Ending the lifespan's group ends the served block, as a signal would.
            logger.info("stdin closed; stopping")
            group.cancel_scope.cancel()

        group.start_soon(speak)
        yield
        group.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    options = arguments(argv)
    # Over stdio, stdout is the protocol: the logs go to stderr.
    stdio = options.transport == STDIO or (options.transport is None and _bundle_transport(options.bundle) == STDIO)
    logs.setup("shipped", os.environ.get("SAIP_LOG_LEVEL", "INFO"), stream=sys.stderr if stdio else None)
    if options.stop_with_stdin and not stdio:
        threading.Thread(target=_stop_when_stdin_closes, name="stdin-watch", daemon=True).start()
    lifecycle.run("shipped", lambda: lifespan(options), expected=(OSError, BundleInvalid, CannotServe))


def _stop_when_stdin_closes() -> None:
    """Block until stdin's end of file (the parent closed it, or died), then stop the way SIGTERM does: draining."""
    with open(os.devnull, "wb") as dropped:  # nothing is written to it; whatever is, is not the protocol
        shutil.copyfileobj(sys.stdin.buffer, dropped)
    logger.info("stdin closed: the process that runs this server is gone; stopping")
    os.kill(os.getpid(), signal.SIGTERM)


def _bundle_transport(path: Path) -> str | None:
    """The transport the bundle names, read without its checks (the lifespan checks it, and says why it cannot)."""
    try:
        transport = json.loads((path / BUNDLE_FILE if path.is_dir() else path).read_text()).get("transport")
    except (OSError, ValueError, AttributeError):
        return None
    return str(transport) if transport else None


if __name__ == "__main__":
    main()
