"""The audit service's settings: where it listens and how many recent entries it keeps for fast reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from saip.common.settings import SaipSettings


class AuditSettings(SaipSettings):
    """`audit.*` keys and `management.audit-capacity`, on top of what every service reads."""

    service: ClassVar[str] = "audit"
    keys: ClassVar[Mapping[str, str]] = {
        **SaipSettings.keys,
        "audit.host": "Interface the audit service's gRPC endpoint listens on",
        "audit.port": "Port of the audit service's gRPC endpoint",
        "audit.metrics-port": "Port of the audit service's /metrics",
        "management.audit-capacity": "Calls kept in the audit ring buffer for fast reads",
    }

    audit_host: str = "127.0.0.1"
    # 0 asks the system for a free port (the embedded default and the tests use it).
    audit_port: int = Field(default=50054, ge=0, le=65535)
    audit_metrics_port: int = Field(default=9104, ge=0, le=65535)
    management_audit_capacity: int = Field(default=500, ge=1, le=100_000)
