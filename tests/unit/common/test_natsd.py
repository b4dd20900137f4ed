"""The ports the embedded default and the shipyard's local target choose: free ones, and whether a given one is."""

from __future__ import annotations

import socket

from saip.common.natsd import free_port, port_is_free


def test_a_port_something_listens_on_is_not_free_and_is_again_once_it_closed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        taken = port_is_free(port)
    assert (taken, port_is_free(port)) == (False, True)
    assert port_is_free(free_port())
