"""The audit settings: defaults, the keys they read, and a bad value refused with the key's name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from saip.audit.config import AuditSettings
from saip.common.settings import ConfigurationError


def test_defaults_are_the_container_ports_and_a_500_entry_window(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SAIP_"):
            monkeypatch.delenv(name)

    settings = AuditSettings.load()

    assert (settings.audit_host, settings.audit_port, settings.audit_metrics_port) == ("127.0.0.1", 50054, 9104)
    assert settings.management_audit_capacity == 500
    assert AuditSettings.service == "audit"


def test_variables_set_the_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_AUDIT_PORT", "0")
    monkeypatch.setenv("SAIP_MANAGEMENT_AUDIT_CAPACITY", "100000")

    settings = AuditSettings.load()

    assert (settings.audit_port, settings.management_audit_capacity) == (0, 100000)


@pytest.mark.parametrize("capacity", [0, 100_001])
def test_a_capacity_outside_1_to_100000_is_refused_naming_the_key(capacity: int) -> None:
    with pytest.raises(ConfigurationError, match=r"management\.audit-capacity \(SAIP_MANAGEMENT_AUDIT_CAPACITY\)"):
        AuditSettings.load(management_audit_capacity=capacity)


def test_the_process_exits_with_the_message_and_no_traceback_on_a_bad_value() -> None:
    env = {**os.environ, "SAIP_AUDIT_METRICS_PORT": "not-a-port"}

    done = subprocess.run(
        [sys.executable, "-m", "saip.audit"], env=env, capture_output=True, text=True, timeout=30, check=False
    )

    assert done.returncode == 1
    assert done.stderr.startswith("invalid configuration: audit.metrics-port (SAIP_AUDIT_METRICS_PORT)")
    assert "Traceback" not in done.stderr
