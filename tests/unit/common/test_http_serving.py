"""The socket the gateway and shipped servers listen on: its connections send small writes at once, one made before the
server serves waits for it, and a taken port says what to change."""

from __future__ import annotations

import asyncio
import socket

import pytest

from saip.common.http_serving import listening


async def _accepted_nodelay(sock: socket.socket) -> int:
    """TCP_NODELAY of a connection asyncio accepts on `sock`, as uvicorn serves it."""
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        value = await asyncio.wait_for(accepted, 10)
        writer.close()
        return value
    finally:
        server.close()


def test_connections_have_nagle_off() -> None:
    # With Nagle on, uvicorn's head-then-body answer waits for the client's delayed ACK: 40 ms a kept-alive request.
    with listening("127.0.0.1", 0, "set the port") as sock:
        assert asyncio.run(_accepted_nodelay(sock)) != 0


def test_a_taken_port_says_what_to_change() -> None:
    with listening("127.0.0.1", 0, "set gateway.port (SAIP_GATEWAY_PORT)") as taken:
        port = taken.getsockname()[1]
        refusal = r"cannot listen on 127\.0\.0\.1:\d+ .*free the port or set gateway\.port"
        with pytest.raises(OSError, match=refusal), listening("127.0.0.1", port, "set gateway.port"):
            pass


async def _served_first(sock: socket.socket) -> None:
    """Serve `sock` until it has accepted one connection, saying "served" to it."""
    accepted: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    class Served(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.WriteTransport)
            transport.write(b"served")
            transport.close()
            accepted.set_result(None)

    server = await asyncio.get_running_loop().create_server(Served, sock=sock)
    try:
        await asyncio.wait_for(accepted, 10)
    finally:
        server.close()


def test_a_connection_made_before_the_server_serves_waits_for_it_rather_than_being_refused() -> None:
    # `saip run`'s first /healthz, sent while the gateway builds its app, is answered once it serves, not refused.
    with (
        listening("127.0.0.1", 0, "set the port") as sock,
        socket.create_connection(sock.getsockname()[:2], timeout=10) as early,
    ):
        asyncio.run(_served_first(sock))
        assert early.recv(16) == b"served"
