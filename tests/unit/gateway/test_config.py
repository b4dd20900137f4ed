"""The gateway refuses a configuration it cannot run safely, naming the key to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.common.settings import ConfigurationError
from saip.gateway.config import GatewaySettings

GOOD = {"admin_token": "a" * 32, "approval_sealing_key": "s" * 32}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"admin_token": "short"}, r"admin-token \(SAIP_ADMIN_TOKEN\): must be at least 32 characters"),
        (
            {"approval_sealing_key": "short"},
            r"approval\.sealing-key \(SAIP_APPROVAL_SEALING_KEY\): must be at least 32",
        ),
        (
            {"mcp_server_auth_token": "abc"},
            r"mcp-server\.auth-token \(SAIP_MCP_SERVER_AUTH_TOKEN\): must be at least 16",
        ),
        ({"mcp_server_auth_token": "a" * 32}, r"admin-token and mcp-server\.auth-token must differ"),
        (
            {"management_tools": ["monitor", "toolz"]},
            r"management\.tools \(SAIP_MANAGEMENT_TOOLS\): unknown categories",
        ),
        ({"management_approval": "sometimes"}, r"management\.approval \(SAIP_MANAGEMENT_APPROVAL\): "),
        ({"hitl_approval_wait_seconds": 0}, r"hitl\.approval-wait-seconds \(SAIP_HITL_APPROVAL_WAIT_SECONDS\): "),
    ],
)
def test_an_unusable_setting_is_refused_with_its_key(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        GatewaySettings.load(**{**GOOD, **overrides})


def test_a_missing_admin_token_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAIP_ADMIN_TOKEN", raising=False)
    with pytest.raises(ConfigurationError, match=r"admin-token \(SAIP_ADMIN_TOKEN\): Field required"):
        GatewaySettings.load(approval_sealing_key="s" * 32)


def test_an_empty_configured_token_counts_as_unset() -> None:
    assert GatewaySettings.load(**GOOD, mcp_server_auth_token="").configured_token is None


def test_a_secret_written_into_saip_yaml_is_refused_and_a_reference_is_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "saip.yaml"
    monkeypatch.setenv("SAIP_CONFIG", str(config))
    monkeypatch.delenv("SAIP_MCP_SERVER_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("SAIP_ADMIN_TOKEN", "a" * 32)
    monkeypatch.setenv("SAIP_APPROVAL_SEALING_KEY", "k" * 32)
    config.write_text("mcp-server:\n  auth-token: literal-token-value-0123456789abcdef\n")
    with pytest.raises(ConfigurationError, match=r"mcp-server\.auth-token is a secret written out") as refused:
        GatewaySettings.load()
    assert "literal-token-value" not in str(refused.value)
    config.write_text("mcp-server:\n  auth-token: ${MY_MCP_TOKEN}\n")
    monkeypatch.setenv("MY_MCP_TOKEN", "m" * 40)
    assert GatewaySettings.load().secret("mcp_server_auth_token") == "m" * 40


def test_the_chat_key_is_the_variable_its_reference_names_or_the_key_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_CHAT_API_KEY", "${CHAT_UNIT_KEY}")
    monkeypatch.setenv("CHAT_UNIT_KEY", "sk-unit-0123")
    assert GatewaySettings.load(**GOOD).chat_key() == "sk-unit-0123"
    monkeypatch.delenv("CHAT_UNIT_KEY")
    with pytest.raises(ConfigurationError, match=r"chat\.api-key \(SAIP_CHAT_API_KEY\) is \$\{CHAT_UNIT_KEY\}, and"):
        GatewaySettings.load(**GOOD)
    assert GatewaySettings.load(**GOOD, chat_api_key="sk-literal").chat_key() == "sk-literal"
    monkeypatch.delenv("SAIP_CHAT_API_KEY")
    assert GatewaySettings.load(**GOOD).chat_key() is None
