"""Risk events a service raises reach the audit trail masked, and raising one never fails the work when NATS is away."""

from __future__ import annotations

import pytest

from saip.common import bus, risk
from saip.common.natsd import LocalNats
from saip.v1 import audit_pb2, common_pb2
from tests.integration.audit_support import audit_client, running_audit
from tests.waiting import eventually

pytestmark = pytest.mark.integration


async def test_a_guard_block_is_chained_with_its_reason_and_masked(nats_server: LocalNats) -> None:
    async with running_audit(nats_server.url) as audit, audit_client(audit.port) as stub:
        nc = await bus.connect(nats_server.url, "tools", within=10)
        try:
            stored = await risk.RiskPublisher(nc, "tools").publish(
                risk.SANDBOX_GUARD_BLOCKED,
                risk.WARN,
                "weather fetched http://169.254.169.254/ with Authorization: Bearer sk-live-123456",
                reason="private-address",
                subject="weather",
            )
        finally:
            await bus.close(nc)
        assert stored

        async def listed() -> list[audit_pb2.RiskEventEntry] | None:
            reply = await stub.ListRiskEvents(audit_pb2.ListRiskEventsRequest(limit=5, type="sandbox-guard-blocked"))
            return list(reply.entries) or None

        [entry] = await eventually(listed)
    event = entry.event
    assert (event.service, event.type, event.reason, event.subject, event.severity) == (
        "tools",
        "sandbox-guard-blocked",
        "private-address",
        "weather",
        common_pb2.SEVERITY_WARN,
    )
    assert "sk-live-123456" not in event.summary and "Bearer ***" in event.summary


async def test_raising_an_event_while_nats_is_away_reports_it_was_not_stored(nats_server: LocalNats) -> None:
    nc = await bus.connect(nats_server.url, "tools", within=10)
    try:
        nats_server.kill()
        stored = await risk.RiskPublisher(nc, "tools", timeout=0.5).publish(
            risk.POISONING_HIT, risk.WARN, "description hides an instruction", subject="weather"
        )
    finally:
        await nc.close()
    assert stored is False
