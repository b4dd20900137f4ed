"""Which management calls a filter keeps, and how long the recent questions took to be answered."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from saip.audit import entries, replies
from saip.v1 import audit_pb2, common_pb2, events_pb2

AT = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)


def call(**fields: object) -> events_pb2.ManagementCall:
    given: dict[str, object] = {
        "tool": "saip_tools_delete",
        "caller": common_pb2.Caller(client_name="claude-code", client_version="2.1.328"),
        "level": common_pb2.APPROVAL_LEVEL_DESTRUCTIVE,
        "outcome": common_pb2.OUTCOME_OK,
    }
    made = events_pb2.ManagementCall(**(given | fields))  # type: ignore[arg-type]
    made.time.FromDatetime(AT)
    return made


def moment(value: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(value)
    return stamp


def test_every_field_of_a_filter_that_is_set_must_match() -> None:
    person = call(caller=common_pb2.Caller(client_name="person", operator="person", interface="cli"))
    assert replies.keeps(audit_pb2.CallFilter())(call())
    assert replies.keeps(audit_pb2.CallFilter(client="claude-code"))(call())
    assert replies.keeps(audit_pb2.CallFilter(client="claude-code 2.1.328", operator="ai", interface="mcp"))(call())
    assert not replies.keeps(audit_pb2.CallFilter(client="codex"))(call())
    assert not replies.keeps(audit_pb2.CallFilter(level=common_pb2.APPROVAL_LEVEL_WRITE))(call())
    assert not replies.keeps(audit_pb2.CallFilter(outcome=common_pb2.OUTCOME_ERROR))(call())
    assert replies.keeps(audit_pb2.CallFilter(operator="person", interface="cli"))(person)
    assert not replies.keeps(audit_pb2.CallFilter(operator="person"))(call())


def test_a_time_range_keeps_calls_from_since_and_before_until() -> None:
    assert replies.keeps(audit_pb2.CallFilter(since=moment(AT)))(call())
    assert not replies.keeps(audit_pb2.CallFilter(until=moment(AT)))(call())
    later = datetime(2026, 12, 5, 11, 0, tzinfo=UTC)
    assert replies.keeps(audit_pb2.CallFilter(since=moment(AT), until=moment(later)))(call())


def test_answer_times_count_the_questions_someone_answered() -> None:
    def decided(seconds: float, decision: int) -> entries.Chained:
        record = events_pb2.AuditRecord(management=call(hitl=decision, approval_seconds=seconds))  # type: ignore[arg-type]
        return entries.Chained(1, 1, b"", AT, record)

    times = replies.answer_times(
        [
            decided(1.0, common_pb2.HITL_DECISION_APPROVED),
            decided(3.0, common_pb2.HITL_DECISION_DECLINED),
            decided(180.0, common_pb2.HITL_DECISION_TIMEOUT),  # nobody answered
            decided(9.0, common_pb2.HITL_DECISION_APPROVED),
        ]
    )
    assert (times.answered, times.p50_seconds, times.max_seconds) == (3, 3.0, 9.0)
    assert 3.0 < times.p90_seconds <= 9.0
