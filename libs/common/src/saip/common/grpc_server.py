"""A grpc.aio server with the standard health service and reflection, stopped gracefully."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

logger = logging.getLogger(__name__)

Registrar = Callable[[grpc.aio.Server], None]


class GrpcServer:
    """Serves the given services on host:port (0 picks a free port); health says SERVING once started."""

    def __init__(self, services: Sequence[tuple[str, Registrar]], host: str, port: int) -> None:
        self._services = services
        self._host = host
        self._requested_port = port
        self.server = grpc.aio.server()
        self.health = health.aio.HealthServicer()
        self.port = 0

    async def start(self) -> int:
        for _, register in self._services:
            register(self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        names = [name for name, _ in self._services]
        reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server)
        self.port = self.server.add_insecure_port(f"{self._host}:{self._requested_port}")
        if self.port == 0:
            raise OSError(f"cannot listen on {self._host}:{self._requested_port}")
        await self.server.start()
        for name in ["", *names]:
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        logger.info("grpc serving", extra={"address": f"{self._host}:{self.port}", "services": names})
        return self.port

    async def stop(self, grace: float = 5.0) -> None:
        """NOT_SERVING first, so probes stop routing, then let in-flight calls finish within `grace`."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
