"""In-process gateway replicas on a real nats-server, for the integration tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from saip.gateway.config import GatewaySettings

ADMIN = "a" * 40
SEALING = "s" * 40


def replica_settings(home: Path, nats_url: str, name: str, **overrides: Any) -> GatewaySettings:
    return GatewaySettings.load(
        home=home,
        nats_url=nats_url,
        admin_token=ADMIN,
        approval_sealing_key=SEALING,
        gateway_replica=name,
        audit_spool_dir=home / "spool" / name,
        audit_addr="127.0.0.1:1",
        **overrides,
    )
