"""Risk events a service raises (sandbox-guard-blocked, poisoning-hit, ...): one record on the audit stream each.

The audit service chains them, counts them by type (and by reason for guard blocks) and serves them to
saip_monitor_risk_events and the Safety dashboard. Raising an event never fails the work that raised it: when NATS
cannot take it, the event is logged (masked) and the work goes on.
"""

from __future__ import annotations

import logging
import uuid

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError

from saip.common import names, tracing
from saip.common.masking import Masker
from saip.common.timestamps import now
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

SANDBOX_GUARD_BLOCKED = "sandbox-guard-blocked"
POISONING_HIT = "poisoning-hit"

INFO = common_pb2.SEVERITY_INFO
WARN = common_pb2.SEVERITY_WARN


class RiskPublisher:
    def __init__(self, nc: NatsClient, service: str, *, timeout: float = 2.0) -> None:
        self._js = nc.jetstream()
        self._service = service
        self._timeout = timeout

    async def publish(
        self,
        kind: str,
        severity: common_pb2.Severity,
        summary: str,
        *,
        reason: str = "",
        subject: str = "",
        masker: Masker | None = None,
    ) -> bool:
        """True once JetStream acknowledged the event."""
        masker = masker or Masker()
        event = events_pb2.RiskEvent(
            id=str(uuid.uuid4()),
            time=now(),
            service=self._service,
            type=kind,
            severity=severity,
            summary=masker.text(summary)[:2000],
            reason=reason,
            subject=masker.text(subject)[:500],  # a URL the guard refused may carry credentials
        )
        payload = events_pb2.AuditRecord(risk=event).SerializeToString()
        try:
            # Within a traced call (a sandbox refusal), the audit collector's chaining joins the call's trace.
            headers = tracing.inject({names.MSG_ID: event.id})
            await self._js.publish(names.AUDIT_RISK, payload, timeout=self._timeout, headers=headers)
        except (NatsError, TimeoutError, OSError) as exc:
            logger.warning(
                "risk event not stored",
                extra={"type": kind, "reason": reason, "summary": event.summary, "error": type(exc).__name__},
            )
            return False
        return True
