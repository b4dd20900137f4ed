"""Serving HTTP inside a lifespan (the gateway, a shipped server): the port bound before anything else opens, and
uvicorn as one task of the lifespan, with no signal handlers of its own (the signals are `lifecycle`'s)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import anyio
import uvicorn


@contextlib.contextmanager
def listening(host: str, port: int, remedy: str) -> Iterator[socket.socket]:
    """The bound socket, listening; a taken port is an OSError that says what to change (`remedy`, e.g. the key to
    set).

    It listens from here, before the app is built and served: a connection made meanwhile waits in the backlog and is
    answered once uvicorn serves, rather than refused. `saip run` asks the gateway's /healthz until it answers, and a
    refused ask is asked again only at its next poll, on the start's critical path (docs/BENCHMARKS.md, "Cold start").

    The protocol is named, not left at 0: asyncio turns Nagle's algorithm off only on the connections of a socket
    whose `proto` is TCP, and without that every answer uvicorn writes in two pieces (head, then body) would wait for
    the client's delayed ACK on a kept-alive connection (40 ms on Linux).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); free the port or {remedy}") from None
    sock.listen()  # uvicorn listens again with its own backlog when it serves
    with sock:
        yield sock


class HttpServer(uvicorn.Server):
    """uvicorn as a task of the lifespan: no signal handlers of its own, and an event once it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = anyio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # SIGTERM and SIGINT are lifecycle's: it stops the server through `should_exit`

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()
