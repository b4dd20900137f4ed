"""The socket the gateway and shipped servers listen on: its connections send small writes at once, and a taken port
says what to change."""

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
        sock.listen()
        assert asyncio.run(_accepted_nodelay(sock)) != 0


def test_a_taken_port_says_what_to_change() -> None:
    with listening("127.0.0.1", 0, "set gateway.port (SAIP_GATEWAY_PORT)") as taken:
        taken.listen()
        port = taken.getsockname()[1]
        refusal = r"cannot listen on 127\.0\.0\.1:\d+ .*free the port or set gateway\.port"
        with pytest.raises(OSError, match=refusal), listening("127.0.0.1", port, "set gateway.port"):
            pass
