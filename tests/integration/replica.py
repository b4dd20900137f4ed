"""A gateway replica as its own process, with the probe tools registered: `python -m tests.integration.replica`.

The same wiring as `python -m saip.gateway` (settings from SAIP_* variables, `process.run`), plus the test-only
probe contribution, so a test can drive a management call that asks the person across real processes.
"""

from __future__ import annotations

from saip.common import logs
from saip.gateway import process
from saip.gateway.config import GatewaySettings
from tests.unit.gateway.probe import ProbeContribution


class ReplicaProbe(ProbeContribution):
    """The probe tools under a category every gateway offers by default (the registrar filters by category)."""

    category = "monitor"


def main() -> None:
    settings = GatewaySettings.load()
    logs.setup("gateway", settings.log_level)
    process.run(settings, lambda _: [ReplicaProbe()])


if __name__ == "__main__":
    main()
