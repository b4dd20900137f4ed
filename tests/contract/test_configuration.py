"""Every configuration key is one name everywhere: a settings field, a variable, and a row of docs/configuration.md;
each service declares its own keys, and the generated manifest every process reads is their union."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

import pytest

from saip.common.settings import COMMON_KEYS, SaipSettings, field_name, installed_services, known_keys
from saip.v1.configuration_keys import KEYS as MANIFEST
from saip.v1.configuration_keys import SERVICES as LAUNCHED

REFERENCE = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
SERVICES = installed_services()
SERVICE_DIRS = sorted(path.name for path in (Path(__file__).parents[2] / "services").iterdir() if path.is_dir())


def test_every_service_in_the_tree_declares_its_settings() -> None:
    assert sorted(SERVICES) == SERVICE_DIRS


def test_the_manifest_is_the_union_of_every_services_keys() -> None:
    declared: dict[str, str] = {}
    for settings in SERVICES.values():
        declared.update(settings.keys)
    assert declared == MANIFEST, "the key manifest is stale: run 'make proto' and commit libs/api"


def test_the_manifest_holds_what_each_service_reads_as_its_class_declares_it() -> None:
    # `saip run` gives each process its environment from these, without importing the settings classes.
    stale = "the key manifest is stale: run 'make proto' and commit libs/api"
    assert sorted(LAUNCHED) == sorted(SERVICES), stale
    for name, settings in SERVICES.items():
        reads = settings.reads
        held = (reads.variables, reads.variable_lists, reads.secrets_files)
        assert set(LAUNCHED[name]["keys"]) == set(settings.keys), stale
        launched = LAUNCHED[name]
        assert (launched["variables"], launched["variable_lists"], launched["secrets_files"]) == held, stale
        for field in (*reads.variable_lists, *reads.secrets_files):
            assert field in settings.model_fields, f"{name}: reads names {field}, which is not one of its fields"


@pytest.mark.parametrize("key", sorted(known_keys()))
def test_every_key_has_a_row_in_the_reference(key: str) -> None:
    assert f"| `{key}` |" in REFERENCE


@pytest.mark.parametrize("settings", [SaipSettings, *SERVICES.values()], ids=lambda s: s.__name__)
def test_every_settings_field_is_a_key_its_class_declares(settings: type[SaipSettings]) -> None:
    assert set(settings.model_fields) == {field_name(key) for key in settings.keys}


def test_every_service_reads_the_common_keys() -> None:
    for settings in SERVICES.values():
        assert COMMON_KEYS.items() <= settings.keys.items()


def documented_default(key: str) -> str:
    """The default column of the key's row in docs/configuration.md."""
    row = next(line for line in REFERENCE.splitlines() if line.startswith(f"| `{key}` |"))
    return row.split(" | ")[1]


def written(value: object) -> str:
    """A default as the reference writes it: a list comma-separated, a boolean in YAML, a whole float bare."""
    if isinstance(value, list):
        return ", ".join(written(item) for item in value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


@pytest.mark.parametrize("settings", [SaipSettings, *SERVICES.values()], ids=lambda s: s.__name__)
def test_every_literal_default_in_the_reference_is_the_fields_default(settings: type[SaipSettings]) -> None:
    # A row whose default is one literal (`720`, `[]`) states the field's default; a described one ("(unset)",
    # "`$home/ingest`") is resolved later by the service, which its own tests check.
    for key in settings.keys:
        cell = documented_default(key)
        if not re.fullmatch(r"`[^`$]*`", cell):
            continue
        field = settings.model_fields[field_name(key)]
        default = field.get_default(call_default_factory=True)
        expected = "[]" if default == [] else written(default)
        assert cell == f"`{expected}`", f"{key}: docs/configuration.md says {cell}, the field's default is {default!r}"
