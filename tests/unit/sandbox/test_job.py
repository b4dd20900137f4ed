"""Jobs and outcomes as they cross between the pool and a worker: JSON, and back to what was sent."""

from __future__ import annotations

import json

from saip.common.netguard import Binding
from saip.sandbox.job import MEMORY_LIMIT, Job, Outcome


def across(data: dict[str, object]) -> dict[str, object]:
    """What the other side of the socket reads (`saip.sandbox.wire` encodes a message as JSON)."""
    decoded = json.loads(json.dumps(data))
    assert isinstance(decoded, dict)
    return decoded


def test_a_job_with_every_field_set_arrives_as_it_was_sent() -> None:
    job = Job(
        code="return { a, key };",
        arguments={"a": [1, {"b": None}], "text": "ünïcode"},
        statics={"key": "saip-secret-0123"},
        network_mode="allowlist",
        hosts_allow=("api.example.com", "*.example.org"),
        secrets=(Binding("saip-secret-0123", "s3cr3t", ("api.example.com",)),),
        timeout=2.5,
        memory_bytes=32 * 1024 * 1024,
        console_cap=7,
        max_result_chars=99,
        max_body=1234,
        max_redirects=1,
    )
    assert Job.from_wire(across(job.to_wire())) == job


def test_an_outcome_with_every_field_set_arrives_as_it_was_sent() -> None:
    outcome = Outcome(
        ok=False,
        result_json="",
        error="The code used more than the 32 MiB memory cap and was stopped.",
        console=["one", "two"],
        console_dropped=3,
        guard_blocks=[(MEMORY_LIMIT, "over the cap")],
        duration_ms=12,
        warm=True,
    )
    assert Outcome.from_wire(across(outcome.to_wire())) == outcome
