"""The gateway process: one lifespan served until SIGTERM or SIGINT (`saip.common.lifecycle`), over HTTP or stdio.

Over HTTP the lifespan opens the gateway, then serves the app with uvicorn as one of its tasks: uvicorn installs no
signal handlers of its own (the signals are lifecycle's), and on stop it stops accepting and drains open requests for
up to `DRAIN_SECONDS` before the gateway closes. Over stdio the same server speaks on stdin/stdout, published tools
only (the registrar's stdio blocker holds), until the client closes stdin or a signal comes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from nats.errors import NoServersError
from prometheus_client import REGISTRY

from saip.common import lifecycle
from saip.common.http_serving import HttpServer, listening
from saip.gateway.app import create_app, opened
from saip.gateway.config import GatewaySettings, Transport
from saip.gateway.server import Extra, Gateway
from saip.gateway.spool import SpoolInUse

logger = logging.getLogger(__name__)

DRAIN_SECONDS = 3
# Start failures said in one line, without a traceback: a taken port, NATS away, a spool another gateway holds.
EXPECTED = (OSError, NoServersError, SpoolInUse)


def run(settings: GatewaySettings, extra: Extra | None = None) -> None:
    """`python -m saip.gateway`: serve until SIGTERM or SIGINT; exit 1 when it cannot start or a fault stops it."""
    lifecycle.run("gateway", lambda: lifespan(settings, extra), expected=EXPECTED)


def lifespan(settings: GatewaySettings, extra: Extra | None = None) -> AbstractAsyncContextManager[Gateway]:
    # The process's own registry: /metrics serves it with the build info and the process collectors.
    gateway = Gateway(settings, extra, registry=REGISTRY)
    if settings.mcp_server_transport is Transport.STDIO:
        return over_stdio(gateway)
    return over_http(gateway)


@asynccontextmanager
async def over_http(gateway: Gateway) -> AsyncIterator[Gateway]:
    settings = gateway.settings
    with listening(settings.gateway_host, settings.gateway_port, "set gateway.port (SAIP_GATEWAY_PORT)") as sock:
        config = uvicorn.Config(
            create_app(gateway),
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=DRAIN_SECONDS,
            lifespan="off",  # the gateway is opened here, where a start failure is lifecycle's to say
        )
        server = HttpServer(config)
        async with opened(gateway), anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            await server.listening.wait()
            yield gateway
            server.should_exit = True  # stop accepting, drain, then the task (and the group) ends


@asynccontextmanager
async def over_stdio(gateway: Gateway) -> AsyncIterator[Gateway]:
    async with gateway.running(), stdio_server() as (read, write), anyio.create_task_group() as group:

        async def speak() -> None:
            await gateway.mcp.run(read, write, gateway.mcp.create_initialization_options())
            # stdin closed: the client went away. Ending the lifespan's group ends the served block, as a signal would.
            logger.info("stdin closed; stopping")
            group.cancel_scope.cancel()

        group.start_soon(speak)
        yield gateway
        group.cancel_scope.cancel()
