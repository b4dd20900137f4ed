"""A gateway replica as its own process, with the probe tools registered: `python -m tests.integration.replica`.

The same wiring as `python -m saip.gateway` (settings from SAIP_* variables, the FastAPI app, uvicorn), plus the
test-only probe contribution, so a test can drive a management call that asks the person across real processes.
"""

from __future__ import annotations

import anyio
import uvicorn

from saip.common import logs
from saip.gateway.config import GatewaySettings
from saip.gateway.server import Gateway, create_app
from tests.unit.gateway.probe import ProbeContribution


class ReplicaProbe(ProbeContribution):
    """The probe tools under a category every gateway offers by default (the registrar filters by category)."""

    category = "monitor"


def main() -> None:
    settings = GatewaySettings.load()
    logs.setup("gateway", settings.log_level)
    gateway = Gateway(settings, extra=lambda _: [ReplicaProbe()])
    config = uvicorn.Config(
        create_app(gateway),
        host=settings.gateway_host,
        port=settings.gateway_port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=3,
        lifespan="on",
    )
    anyio.run(uvicorn.Server(config).serve)


if __name__ == "__main__":
    main()
