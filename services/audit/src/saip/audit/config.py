"""The audit service's settings: where it listens, how many recent entries it keeps for fast reads, and how many
recent traces it keeps and for how long."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from saip.common.settings import Port, SaipSettings, service_keys


class AuditSettings(SaipSettings):
    """`audit.*` keys and `management.audit-capacity`, on top of what every service reads."""

    service: ClassVar[str] = "audit"
    # The service's keys: a parallel table, declared the same way in every service (docs/architecture.md).
    keys: ClassVar[Mapping[str, str]] = service_keys(
        endpoint="audit",
        own={
            "management.audit-capacity": "Calls kept in the audit ring buffer for fast reads",
            "audit.traces-max": (
                "Recent traces the audit service keeps in memory (the least recently touched goes first)"
            ),
            "audit.traces-max-age-minutes": "How long a kept trace stays after its last span arrived",
        },
    )

    audit_host: str = "127.0.0.1"
    audit_port: Port = 50054
    audit_metrics_port: Port = 9104
    management_audit_capacity: int = Field(default=500, ge=1, le=100_000)
    audit_traces_max: int = Field(default=2000, ge=1, le=100_000)
    audit_traces_max_age_minutes: float = Field(default=60.0, gt=0, le=7 * 24 * 60)
