"""A real HTTP server on a free loopback port, in a thread, for the tests that fetch (the network guard, the
sandbox's fetch, ingest by URL, the container health probe)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def http_origin(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` until the block ends; yields the origin, e.g. http://127.0.0.1:41234."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that keeps the test output clean: the tests read responses, not the server's access log."""

    def log_message(self, format: str, *args: Any) -> None:
        return
