"""Configuration: saip.yaml and SAIP_* variables, one key name each, typos refused with the nearest key."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.settings import (
    COMMON_KEYS,
    ConfigurationError,
    SaipSettings,
    address_keys,
    env_name,
    field_name,
    read_config_file,
    service_keys,
)


def test_a_key_maps_to_its_field_and_variable() -> None:
    assert field_name("mcp-server.auth-token") == "mcp_server_auth_token"
    assert env_name("hitl.approval-wait-seconds") == "SAIP_HITL_APPROVAL_WAIT_SECONDS"
    assert env_name("management.approval") == "SAIP_MANAGEMENT_APPROVAL"


def test_a_services_keys_are_the_common_ones_then_its_endpoints_then_its_own() -> None:
    keys = service_keys(endpoint="probe", own={"probe.size": "How big a probe is"})
    assert list(keys) == [*COMMON_KEYS, "probe.host", "probe.port", "probe.metrics-port", "probe.size"]
    assert keys["probe.size"] == "How big a probe is"
    assert list(service_keys(endpoint=None, own={"size": "How big"})) == [*COMMON_KEYS, "size"]


def test_an_address_key_is_worded_once_and_says_what_an_unset_address_goes_without() -> None:
    assert address_keys("audit", "shipyard") == {
        "audit.addr": "Address (host:port) of the audit service's gRPC endpoint",
        "shipyard.addr": "Address (host:port) of the shipyard service's gRPC endpoint; unset offers no shipyard area",
    }


def test_nested_and_dotted_yaml_keys_are_read(tmp_path: Path) -> None:
    path = tmp_path / "saip.yaml"
    path.write_text("management:\n  approval: all\n  tools: [monitor]\naudit.max-age-hours: 24\n")
    assert read_config_file(path) == {
        "management_approval": "all",
        "management_tools": ["monitor"],
        "audit_max_age_hours": 24,
    }


def test_a_typo_is_refused_with_the_nearest_key(tmp_path: Path) -> None:
    path = tmp_path / "saip.yaml"
    path.write_text("management:\n  aproval: all\n")
    with pytest.raises(
        ConfigurationError, match=r"unknown key 'management\.aproval'; did you mean 'management\.approval'"
    ):
        read_config_file(path)


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "saip.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigurationError, match="must hold a mapping"):
        read_config_file(path)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b"management: [\n",
            "{path} is not valid YAML: line 2, column 1: expected the node content, but found '<stream end>' "
            "(while parsing a flow node)",
        ),
        (b"management:\n  approval: all\n tools: x\n", "{path} is not valid YAML: line 3, column 2: "),
        (b"approval: \xff\n", "{path} is not UTF-8 text"),
    ],
)
def test_a_file_that_cannot_be_read_as_yaml_is_refused_saying_where(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "saip.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigurationError) as refused:
        read_config_file(path)
    assert str(refused.value).startswith(said.format(path=path))


def test_an_unreadable_file_is_refused_with_why(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=f"cannot read {tmp_path}: Is a directory"):
        read_config_file(tmp_path)


def test_variables_win_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "saip.yaml"
    path.write_text("log-level: DEBUG\naudit:\n  max-age-hours: 5\n")
    monkeypatch.setenv("SAIP_CONFIG", str(path))
    monkeypatch.setenv("SAIP_LOG_LEVEL", "WARNING")
    settings = SaipSettings.load()
    assert (settings.log_level, settings.audit_max_age_hours) == ("WARNING", 5)
    assert settings.configured("audit_max_age_hours") and not settings.configured("nats_url")


def test_a_bad_value_names_the_key_and_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_AUDIT_MAX_AGE_HOURS", "-1")
    with pytest.raises(ConfigurationError, match=r"audit\.max-age-hours \(SAIP_AUDIT_MAX_AGE_HOURS\): "):
        SaipSettings.load()


def test_a_missing_explicit_config_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigurationError, match=r"SAIP_CONFIG names .*nope\.yaml, which is not a file"):
        SaipSettings.load()
