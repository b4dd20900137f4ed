"""A risk event leaves the service masked: its summary and its subject (a refused URL may carry credentials)."""

from __future__ import annotations

from typing import Any

from saip.common import names, risk
from saip.v1 import events_pb2


class CapturingJetStream:
    """The one JetStream call RiskPublisher makes, kept for the test to read."""

    def __init__(self) -> None:
        self.published: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes, **_: Any) -> None:
        self.published.append((subject, payload))


class Connection:
    def __init__(self) -> None:
        self.js = CapturingJetStream()

    def jetstream(self) -> CapturingJetStream:
        return self.js


async def test_the_summary_and_the_subject_are_masked() -> None:
    nc = Connection()
    stored = await risk.RiskPublisher(nc, "knowledge").publish(  # type: ignore[arg-type]
        risk.SANDBOX_GUARD_BLOCKED,
        risk.WARN,
        "refused https://ann:hunter22@intranet.example/doc?sig=abc123 with Authorization: Bearer sk-live-1234",
        reason="private-address",
        subject="https://ann:hunter22@intranet.example/doc?sig=abc123",
    )
    assert stored
    [(subject, payload)] = nc.js.published
    event = events_pb2.AuditRecord.FromString(payload).risk
    assert subject == names.AUDIT_RISK
    assert event.subject == "https://ann:***@intranet.example/doc?sig=***"
    assert "hunter22" not in event.summary and "abc123" not in event.summary and "sk-live-1234" not in event.summary
