"""What a record stands for: derived MANAGEMENT events, masking, log lines, rejections, counter signals."""

from __future__ import annotations

import pytest

from saip.audit import records
from saip.audit.errors import RecordRejected
from saip.common.masking import Masker
from saip.v1 import common_pb2, events_pb2
from tests.unit.audit.samples import management_call, risk_event, tool_call

READ, WRITE, DESTRUCTIVE = (
    common_pb2.APPROVAL_LEVEL_READ,
    common_pb2.APPROVAL_LEVEL_WRITE,
    common_pb2.APPROVAL_LEVEL_DESTRUCTIVE,
)
OK, ERROR, DECLINED = common_pb2.OUTCOME_OK, common_pb2.OUTCOME_ERROR, common_pb2.OUTCOME_DECLINED
INFO, WARN = common_pb2.SEVERITY_INFO, common_pb2.SEVERITY_WARN


def test_a_successful_read_raises_no_management_event() -> None:
    call = management_call(tool="saip_tools_list", level=READ, outcome=OK).management

    assert records.management_risk_event(call) is None


@pytest.mark.parametrize(
    ("level", "outcome", "severity"),
    [
        (READ, ERROR, WARN),  # a failure, even of a read
        (WRITE, OK, INFO),
        (WRITE, DECLINED, WARN),
        (DESTRUCTIVE, OK, WARN),
        (DESTRUCTIVE, common_pb2.OUTCOME_TIMEOUT, WARN),
        (WRITE, common_pb2.OUTCOME_REFUSED, WARN),
    ],
)
def test_every_other_call_raises_a_management_event_warn_for_destructive_or_failed(
    level: common_pb2.ApprovalLevel, outcome: common_pb2.Outcome, severity: common_pb2.Severity
) -> None:
    event = records.management_risk_event(management_call(level=level, outcome=outcome).management)

    assert event is not None
    assert event.severity == severity


def test_the_management_event_says_who_ran_what_with_which_outcome() -> None:
    call = management_call("m-7", tool="saip_tools_publish", level=DESTRUCTIVE, outcome=DECLINED).management

    event = records.management_risk_event(call)

    assert event is not None
    assert event.summary == "claude-code 2.1.314 ran saip_tools_publish (DESTRUCTIVE): DECLINED — Publish 'cafe-desk'"
    assert (event.type, event.service, event.subject, event.reason) == (
        "MANAGEMENT",
        "gateway",
        "saip_tools_publish",
        "declined",
    )
    assert event.id == "m-7:management"
    assert event.time == call.time


def test_a_record_with_a_leaked_secret_is_masked_and_the_original_left_alone() -> None:
    record = management_call(summary="Register 'wiki' with Authorization: Bearer sk-live-1234567890")
    record.management.arguments = '{"name":"wiki","headers":{"x-api-key":"abcd-1234"},"url":"${WIKI_URL}"}'
    record.management.result = "connected with token=s3cr3t-v4lue"

    masked = records.mask(record, Masker())

    call = masked.management
    assert "sk-live-1234567890" not in call.summary
    assert call.summary == "Register 'wiki' with Authorization: Bearer ***"
    assert call.arguments == '{"name":"wiki","headers":{"x-api-key":"***"},"url":"${WIKI_URL}"}'
    assert call.result == "connected with token=***"
    assert "sk-live-1234567890" in record.management.summary


def test_masking_replaces_known_secret_values_wherever_they_appear() -> None:
    record = tool_call()
    record.tool_call.result = "fetched https://wiki.example/?k=hunter2hunter2"

    masked = records.mask(record, Masker(secrets=["hunter2hunter2"]))

    assert masked.tool_call.result == "fetched https://wiki.example/?k=***"


def test_risk_event_summaries_are_masked() -> None:
    masked = records.mask(risk_event(summary="blocked fetch with password=letmein"), Masker())

    assert masked.risk.summary == "blocked fetch with password=***"


def test_the_management_log_line_is_exactly_the_reference_format() -> None:
    record = management_call(level=DESTRUCTIVE, outcome=DECLINED, duration_ms=1834, summary="Publish 'cafe-desk'")

    assert records.log_line(record) == (
        "mgmt.call client=claude-code 2.1.314 tool=saip_tools_publish level=DESTRUCTIVE outcome=DECLINED "
        "durationMs=1834 summary=Publish 'cafe-desk'"
    )


def test_tool_call_and_risk_event_log_lines() -> None:
    tool = tool_call(hitl=common_pb2.HITL_DECISION_APPROVED)
    unasked = tool_call()

    assert records.log_line(tool) == (
        "tool.call client=claude-code 2.1.314 tool=wiki_outline source=exposed outcome=OK durationMs=40 hitl=approved"
    )
    assert records.log_line(unasked).endswith("hitl=none")
    assert records.log_line(risk_event()) == (
        "risk.event type=sandbox-guard-blocked severity=warn service=tools subject=wiki_outline reason=network "
        "summary=wiki_outline tried to open a socket"
    )


def test_a_persons_change_is_logged_with_the_interface_it_came_through() -> None:
    record = management_call(level=DESTRUCTIVE, summary="Delete a tool")
    record.management.caller.CopyFrom(common_pb2.Caller(client_name="person", operator="person", interface="cli"))

    assert records.log_line(record).startswith("mgmt.call client=person interface=cli tool=saip_tools_publish ")
    assert records.management_risk_event(record.management).summary.startswith("the person ran saip_tools_publish")


def test_a_caller_without_a_name_is_logged_as_unknown() -> None:
    record = management_call()
    record.management.ClearField("caller")

    assert "client=unknown tool=" in records.log_line(record)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xff\xff\xff\xff", "undecodable"),
        (events_pb2.AuditRecord().SerializeToString(), "empty"),
        (events_pb2.AuditRecord(risk=events_pb2.RiskEvent(type="poisoning-hit")).SerializeToString(), "missing-id"),
    ],
)
def test_a_message_that_is_not_a_usable_record_is_rejected_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(RecordRejected) as rejected:
        records.parse(data)

    assert rejected.value.reason == reason


def test_a_published_record_parses_back_with_its_kind_subject_and_id() -> None:
    record = records.parse(tool_call("t-9").SerializeToString())

    assert records.kind_of(record) == "tool"
    assert records.subject_of(record) == "saip.audit.tool"
    assert records.record_id(record) == "t-9"


def test_a_management_call_signals_its_tool_outcome_decision_and_derived_event() -> None:
    signals = records.signals(management_call(outcome=DECLINED, hitl=common_pb2.HITL_DECISION_DECLINED))

    assert signals.kind == "management"
    assert signals.management == ("saip_tools_publish", "declined")
    assert signals.hitl == ("server", "declined")
    assert signals.risk_event == ("MANAGEMENT", "warn")


def test_a_call_without_a_question_counts_no_decision() -> None:
    assert records.signals(management_call()).hitl is None
    assert records.signals(tool_call()).hitl is None


def test_a_tool_call_a_chat_turn_asked_about_is_the_chat_sides_decision() -> None:
    signals = records.signals(tool_call(hitl=common_pb2.HITL_DECISION_ELICIT_FAILED, side=common_pb2.HITL_SIDE_CHAT))

    assert signals.hitl == ("chat", "elicit-failed")
    assert signals.risk_event is None


def test_risk_events_signal_guard_blocks_poisoning_and_tamper_rejects() -> None:
    guard = records.signals(risk_event(reason="network"))
    poisoning = records.signals(risk_event(risk_type="poisoning-hit", reason=""))
    tamper = records.signals(risk_event(risk_type="hash-ledger-mismatch", severity=INFO))

    assert (guard.guard_block_reason, guard.risk_event) == ("network", ("sandbox-guard-blocked", "warn"))
    assert (poisoning.poisoning_hit, poisoning.guard_block_reason) == (True, None)
    assert (tamper.tamper_reject, tamper.risk_event) == (True, ("hash-ledger-mismatch", "info"))


def test_the_approval_rate_is_approved_over_every_decision() -> None:
    counts = {("server", "approved"): 3, ("server", "declined"): 1, ("chat", "approved"): 1, ("server", "denied"): 3}

    assert records.approval(counts) == (8, 0.5)
    assert records.approval({("server", "approved"): 0}) == (0, 0.0)


def test_a_call_under_a_credential_names_it_before_the_client() -> None:
    record = management_call(level=DESTRUCTIVE, outcome=DECLINED, duration_ms=1834, summary="Publish 'cafe-desk'")
    record.management.caller.credential.CopyFrom(common_pb2.Credential(id="3f9a1c2b7d04", kind="named", name="ci-bot"))

    assert records.log_line(record).startswith(
        "mgmt.call client='ci-bot' (named token 3f9a1c2b7d04), claude-code 2.1.314 tool=saip_tools_publish "
    )
    event = records.management_risk_event(record.management)
    assert event is not None
    assert event.summary.startswith("'ci-bot' (named token 3f9a1c2b7d04), claude-code 2.1.314 ran saip_tools_publish")
