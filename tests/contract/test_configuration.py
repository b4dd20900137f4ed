"""Every configuration key is one name everywhere: a settings field, a variable, and a row of docs/configuration.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from saip.audit.config import AuditSettings
from saip.common.settings import KEYS, SaipSettings, field_name
from saip.gateway.config import GatewaySettings
from saip.knowledge.config import KnowledgeSettings
from saip.tools.config import ToolsSettings

REFERENCE = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_has_a_row_in_the_reference(key: str) -> None:
    assert f"| `{key}` |" in REFERENCE


@pytest.mark.parametrize(
    "settings",
    [SaipSettings, GatewaySettings, AuditSettings, ToolsSettings, KnowledgeSettings],
    ids=lambda s: s.__name__,
)
def test_every_settings_field_is_a_known_key(settings: type[SaipSettings]) -> None:
    known = {field_name(key) for key in KEYS}
    assert set(settings.model_fields) <= known


def test_every_key_is_read_by_some_service() -> None:
    fields = (
        set(GatewaySettings.model_fields)
        | set(AuditSettings.model_fields)
        | set(ToolsSettings.model_fields)
        | set(KnowledgeSettings.model_fields)
    )
    assert {field_name(key) for key in KEYS} <= fields
