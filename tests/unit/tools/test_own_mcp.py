"""saip's own /mcp, told by its URL (`saip.tools.upstream.target`): every form of an address that reaches the gateway
where it listens, and nothing else."""

from __future__ import annotations

import socket

import pytest

from saip.tools.errors import OwnMcp
from saip.tools.upstream import target
from saip.v1 import upstream_pb2 as pb

HERE = ("http://127.0.0.1:9123/mcp",)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9123/mcp",
        "http://localhost:9123/mcp/",
        "http://LOCALHOST.:9123/MCP",
        "http://0.0.0.0:9123/mcp",
        "http://[::]:9123/mcp",
        "http://[::1]:9123/mcp",
        "http://[::ffff:127.0.0.1]:9123/mcp",
        "http://127.0.0.2:9123/mcp",
        "http://127.1:9123/mcp",
        "http://2130706433:9123/mcp",
        "http://127.0.0.1:9123/%6Dcp",
        "http://127.0.0.1:9123//mcp",
        "http://127.0.0.1:9123/tools/../mcp",
        "https://user:pass@127.0.0.1:9123/mcp?session=1#top",
    ],
)
async def test_every_form_of_a_loopback_address_is_the_gateway_on_this_machine(url: str) -> None:
    assert await target.is_gateway(url, HERE)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9124/mcp",
        "http://127.0.0.1/mcp",
        "http://127.0.0.1:9123/other",
        "http://127.0.0.1:9123/mcp/tools",
        "http://127.0.0.1:9123",
        "https://example.com:9123/mcp",
        "http://127.0.0.1:notaport/mcp",
        "not a url",
    ],
)
async def test_another_port_path_or_host_is_not(url: str) -> None:
    assert not await target.is_gateway(url, HERE)


async def test_a_gateway_on_every_address_is_reached_by_any_of_this_machine_s_own() -> None:
    own = _own_address()
    if own is None:
        pytest.skip("this machine has no address besides loopback")
    assert await target.is_gateway(f"http://{own}:9123/mcp", ("http://0.0.0.0:9123/mcp",))
    assert not await target.is_gateway(f"http://{own}:9123/mcp", HERE)  # listening on loopback only: not reached
    assert not await target.is_gateway("http://192.0.2.1:9123/mcp", ("http://0.0.0.0:9123/mcp",))  # not ours


async def test_a_named_gateway_is_known_by_its_name_and_what_it_resolves_to() -> None:
    # Compose and k8s list the gateway's service name; this one resolves to loopback here.
    listed = ("http://localhost:8282/mcp", "http://gateway.invalid:8282/mcp")
    assert await target.is_gateway("http://Gateway.invalid.:8282/mcp", listed)
    assert await target.is_gateway("http://127.0.0.1:8282/mcp", listed)
    assert not await target.is_gateway("http://192.0.2.1:8282/mcp", listed)


async def test_the_check_refuses_its_own_mcp_with_the_seed_s_sentence_before_anything_connects() -> None:
    server = pb.Server(id="myself", transport=pb.TRANSPORT_STREAMABLE_HTTP, url="http://[::]:9123/mcp")
    with pytest.raises(OwnMcp) as refused:
        await target.check(server, HERE)
    assert str(refused.value) == (
        "Server 'myself' is saip's own /mcp, which cannot be its own upstream; register the upstream server's URL "
        "instead."
    )
    # A reference resolves first: the address it names is what is checked.
    referenced = pb.Server(id="hidden", transport=pb.TRANSPORT_STREAMABLE_HTTP, url="http://${GATEWAY_HOST}:9123/mcp")
    with pytest.raises(OwnMcp):
        await target.check(referenced, HERE, {"GATEWAY_HOST": "localhost"})


def _own_address() -> str | None:
    """An address of one of this machine's interfaces other than loopback (a UDP socket's route; nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address
