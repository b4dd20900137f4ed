"""Configuration read once at start: `saip.yaml` and `SAIP_*` variables, validated, failing with the key's name.

A key `a.b-c` of `saip.yaml` is the field `a_b_c` and the variable `SAIP_A_B_C` (upper case, dots and dashes
become underscores). Variables win over the file. A key whose whole value is `${VAR}` (`chat.api-key:
${OPENAI_API_KEY}`) takes the value of the variable VAR, which the launchers give the service by that name
(`environment`): a service is started with its own settings and the variables they name, never the whole shell.

Each service declares its own keys on its settings class (`keys`, with what each means) and names that class in its
package's `saip.services` entry point. `make proto` writes the union of every service's keys into the generated
`saip.v1.configuration_keys`, which every process reads: one `saip.yaml` serves every service, each takes its own
keys and passes over the others', and a key no service declares is refused with the nearest real key instead of
being silently ignored, in a container that holds one service as much as in the embedded default.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

# The names and the file live in `configuration`, the launch environment in `launching`, which need no Pydantic (a
# launcher reads them); they are named here too, where the services import them from.
from saip.common.configuration import (
    COMMON_KEYS,
    CONFIG_ENV,
    REFERENCE,
    SERVICES_GROUP,
    ConfigurationError,
    address_keys,
    config_file,
    endpoint_keys,
    env_name,
    field_name,
    is_own_variable,
    key_of,
    known_keys,
    listed_environment,
    listed_names,
    read_config_file,
    resolve_reference,
    service_keys,
)
from saip.common.launching import BASIC_PREFIXES, BASIC_VARIABLES, Reads, launch_environment

__all__ = [
    "BASIC_PREFIXES",
    "BASIC_VARIABLES",
    "COMMON_KEYS",
    "CONFIG_ENV",
    "ConfigurationError",
    "DeclaredItem",
    "Port",
    "Reads",
    "SaipSettings",
    "StrList",
    "address_keys",
    "config_file",
    "declared_by_name",
    "endpoint_keys",
    "env_name",
    "field_name",
    "installed_services",
    "is_own_variable",
    "key_of",
    "known_keys",
    "listed_environment",
    "listed_names",
    "read_config_file",
    "service_keys",
]

# 0 asks the system for a free port (the embedded default and the tests use it).
Port = Annotated[int, Field(ge=0, le=65535)]

_Item = TypeVar("_Item")


def installed_services() -> dict[str, type[SaipSettings]]:
    """The services installed beside this process, by name: each package names its settings class in the
    `saip.services` entry point group (the launcher and the key manifest are derived from them)."""
    found: dict[str, type[SaipSettings]] = {}
    for point in entry_points(group=SERVICES_GROUP):
        settings = point.load()
        if not (isinstance(settings, type) and issubclass(settings, SaipSettings)):
            raise ConfigurationError(f"entry point {SERVICES_GROUP}:{point.name} does not name a settings class")
        found[point.name] = settings
    return dict(sorted(found.items()))


class DeclaredItem(BaseModel):
    """An item of a list key in `saip.yaml` (a document, a shipped server): its keys written with dashes (`top-k`) or
    underscores, nothing unknown, and never changed once read."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=lambda name: name.replace("_", "-"), populate_by_name=True, frozen=True
    )


def declared_by_name(
    documents: Sequence[Any],
    key: str,
    read: Callable[[Any], _Item],
    name: Callable[[_Item], str],
    *,
    what: str,
    refused: type[Exception],
) -> dict[str, _Item]:
    """The items a list key declares (a tool, a server), by name, read before anything is opened: an item `read`
    refuses (raising `refused`) or a name declared twice is a ConfigurationError naming its place (`key[index]`)."""
    items: dict[str, _Item] = {}
    for index, document in enumerate(documents):
        try:
            item = read(document)
        except refused as exc:
            raise ConfigurationError(f"{key}[{index}]: {exc}") from None
        if name(item) in items:
            raise ConfigurationError(f"{key}[{index}]: the {what} '{name(item)}' is declared twice")
        items[name(item)] = item
    return items


def _split_list(value: Any) -> Any:
    """Accept a list, a JSON list, or comma-separated text (what a person types in a variable)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


StrList = Annotated[list[str], NoDecode, BeforeValidator(_split_list)]


class _YamlSource(PydanticBaseSettingsSource):
    """Values from `saip.yaml`, below the environment in precedence. A secret key (a SecretStr field) is refused
    there unless it is `${VAR}`: the file is shared and copied (a ConfigMap in k8s, a file beside the code), so a
    secret written into it is a secret handed to everyone who reads it."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        path = config_file()
        self._values = read_config_file(path) if path else {}
        for name, value in self._values.items():
            field = settings_cls.model_fields.get(name)
            secret = field is not None and SecretStr in (field.annotation, *get_args(field.annotation))
            if secret and isinstance(value, str) and value and not REFERENCE.match(value):
                key = key_of(name)
                raise ConfigurationError(
                    f"{path}: {key} is a secret written out, and saip.yaml is read by everyone who can read the "
                    f"configuration; write {key}: ${{SOME_VARIABLE}} and set that variable, or set {env_name(key)} "
                    "instead"
                )

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {name: value for name, value in self._values.items() if name in self.settings_cls.model_fields}


class SaipSettings(BaseSettings):
    """The settings every service reads; each service extends it with its own fields and declares them in `keys`
    (`service_keys(endpoint="<name>", own={"<name>.<key>": "what it means", ...})`)."""

    model_config = SettingsConfigDict(env_prefix="SAIP_", extra="ignore", validate_default=True)
    service: ClassVar[str] = "saip"
    keys: ClassVar[Mapping[str, str]] = COMMON_KEYS
    # The variables the service reads besides its keys' (a launcher gives it these and no others).
    reads: ClassVar[Reads] = Reads()

    home: Path = Field(default=Path(".saip"))
    nats_url: str = "nats://127.0.0.1:4222"
    nats_replicas: int = Field(default=1, ge=1, le=5)
    log_level: str = Field(default="INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$")
    audit_max_age_hours: float = Field(default=720.0, gt=0)
    audit_max_bytes: int = Field(default=1 << 30, ge=1 << 20)
    tracing_enabled: bool = True
    tracing_sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls))

    @model_validator(mode="before")
    @classmethod
    def _references(cls, data: Any) -> Any:
        """A value that is exactly `${VAR}` takes VAR's value; an unset VAR stops the start naming the key."""
        if not isinstance(data, dict):
            return data
        try:
            return {name: resolve_reference(name, value, os.environ) for name, value in data.items()}
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None

    @classmethod
    def environment(cls, environ: Mapping[str, str]) -> dict[str, str]:
        """What a launcher gives a process of this service out of `environ` (`launching.launch_environment` of
        its keys and `reads`); `saip run` reads the same out of the key manifest, without this class."""
        return launch_environment(cls.keys, cls.reads, environ)

    @classmethod
    def load(cls, **overrides: Any) -> Self:
        """Read and validate; a bad value becomes one ConfigurationError naming the key and its variable."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                message = str(error["msg"]).removeprefix("Value error, ")
                if not error["loc"]:
                    problems.append(message)
                    continue
                key = key_of(str(error["loc"][0]))
                # Inside a list of items (knowledge.documents), say which item and which of its keys.
                inner = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"][1:])
                problems.append(f"{key}{inner} ({env_name(key)}): {message}")
            raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from None

    def listens(self) -> tuple[str, int, int]:
        """Where a gRPC service listens: its `<service>.host`, `.port` and `.metrics-port` (declared with
        `endpoint_keys`; tests/contract/test_configuration.py holds every declared key to a field)."""
        prefix = field_name(self.service)
        return getattr(self, f"{prefix}_host"), getattr(self, f"{prefix}_port"), getattr(self, f"{prefix}_metrics_port")

    def secret(self, field: str) -> str | None:
        value = getattr(self, field)
        if isinstance(value, SecretStr):
            return value.get_secret_value() or None
        return None

    def configured(self, field: str) -> bool:
        """Whether the person set this key (in saip.yaml or the environment), which makes it read-only to the AI."""
        return field in self.model_fields_set
