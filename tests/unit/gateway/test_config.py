"""The gateway refuses a configuration it cannot run safely, naming the key to fix."""

from __future__ import annotations

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


def test_the_chat_key_is_the_variable_its_reference_names_or_the_key_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAIP_CHAT_API_KEY", "${CHAT_UNIT_KEY}")
    monkeypatch.setenv("CHAT_UNIT_KEY", "sk-unit-0123")
    assert GatewaySettings.load(**GOOD).chat_key() == "sk-unit-0123"
    monkeypatch.delenv("CHAT_UNIT_KEY")
    with pytest.raises(ConfigurationError, match=r"chat\.api-key names \$\{CHAT_UNIT_KEY\}, which is not set"):
        GatewaySettings.load(**GOOD).chat_key()
    assert GatewaySettings.load(**GOOD, chat_api_key="sk-literal").chat_key() == "sk-literal"
    monkeypatch.delenv("SAIP_CHAT_API_KEY")
    assert GatewaySettings.load(**GOOD).chat_key() is None
