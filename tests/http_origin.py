"""A real HTTP server on a free loopback port, in a thread, for the tests that fetch (the network guard, the
sandbox's fetch, ingest by URL, the container health probe)."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def http_origin(
    handler: Callable[..., BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None, host: str = "127.0.0.1"
) -> Iterator[str]:
    """Serve `handler` until the block ends (over TLS with `tls`); yields the origin, e.g. http://127.0.0.1:41234,
    named with `host` (the name a certificate is for)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls is not None else 'http'}://{host}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that keeps the test output clean: the tests read responses, not the server's access log."""

    def log_message(self, format: str, *args: Any) -> None:
        return
