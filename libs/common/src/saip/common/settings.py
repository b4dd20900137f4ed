"""Configuration read once at start: `saip.yaml` and `SAIP_*` variables, validated, failing with the key's name.

A key `a.b-c` of `saip.yaml` is the field `a_b_c` and the variable `SAIP_A_B_C` (upper case, dots and dashes
become underscores). Variables win over the file. Every key any service reads is listed in `KEYS`, so a typo
in `saip.yaml` is refused with the nearest real key instead of being silently ignored.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

import yaml
from pydantic import BeforeValidator, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

CONFIG_ENV = "SAIP_CONFIG"
DEFAULT_CONFIG_FILE = "saip.yaml"

# Every configuration key of every service, with what it means. docs/configuration.md mirrors this table and a
# contract test keeps the two and the settings classes in step.
KEYS: dict[str, str] = {
    "home": "Folder for local state (NATS store, spool, generated tokens) in the embedded default",
    "nats-url": "NATS server URL; the embedded default starts its own when unset",
    "nats-replicas": "Copies JetStream keeps of each bucket and stream saip creates: 3 on a 3-node cluster",
    "log-level": "DEBUG, INFO, WARNING or ERROR",
    "admin-token": "Bearer token of the REST API (the person's; never the MCP token)",
    "mcp-server.auth-token": "The MCP bearer token; when set here it cannot be changed through the API",
    "mcp-server.transport": "http (default) or stdio; the management surface is never offered over stdio",
    "management.enabled": "Master switch of the management tools",
    "management.tools": "Categories offered; empty means every category but mcp-register",
    "management.exclude": "Management tool names left out",
    "management.approval": "Which levels ask the person: destructive, all or none",
    "management.audit-capacity": "Calls kept in the audit ring buffer for fast reads",
    "hitl.approval-wait-seconds": "How long an approval question waits for the person",
    "hitl.progress-interval-seconds": "How often a waiting question reports progress (2025-11-25 clients)",
    "approval.sealing-key": "Secret (32+ bytes) sealing 2026-07-28 approval state; shared by every gateway",
    "gateway.host": "Interface the gateway listens on",
    "gateway.port": "Port of /mcp, /api/v1, /healthz and /metrics",
    "gateway.allowed-hosts": "Host headers /mcp accepts (DNS-rebinding protection), host:port or host:*",
    "gateway.replica": "Name of this gateway replica in audit records; the host name and pid when unset",
    "audit.addr": "Address (host:port) of the audit service's gRPC endpoint",
    "tools.addr": "Address (host:port) of the tools service's gRPC endpoint; unset serves no authored tools",
    "tools.host": "Interface the tools service's gRPC endpoint listens on",
    "tools.port": "Port of the tools service's gRPC endpoint",
    "tools.metrics-port": "Port of the tools service's /metrics",
    "tools.sandbox-workers": "Worker processes that run tool code (each runs one call at a time)",
    "tools.sandbox-timeout-seconds": "Wall-clock limit of one tool run",
    "tools.sandbox-memory-mb": "Memory cap of one tool run (the V8 heap; array buffers are capped per worker)",
    "tools.declared": "Tools declared in configuration (a list of tool specs): served, read-only to the AI",
    "knowledge.addr": "Address (host:port) of the knowledge service's gRPC endpoint; unset serves no knowledge tools",
    "audit.host": "Interface the audit service's gRPC endpoint listens on",
    "audit.port": "Port of the audit service's gRPC endpoint",
    "audit.metrics-port": "Port of the audit service's /metrics",
    "audit.max-age-hours": "How long the SAIP_AUDIT stream keeps records",
    "audit.max-bytes": "How many bytes the SAIP_AUDIT stream keeps",
    "audit.spool-dir": "Where a gateway keeps audit records while NATS is unreachable",
    "knowledge.host": "Interface the knowledge service's gRPC endpoint listens on",
    "knowledge.port": "Port of the knowledge service's gRPC endpoint",
    "knowledge.metrics-port": "Port of the knowledge service's /metrics",
    "knowledge.ingest-roots": "Folders documents may be ingested from by path (':'-separated in the variable)",
    "knowledge.max-document-bytes": "Largest document (file, URL body or text) an ingest accepts",
    "knowledge.documents": "Documents declared in configuration (read-only to the AI)",
    "knowledge.pipelines": "Pipelines declared in configuration (read-only to the AI)",
    "knowledge.dense-model": "ONNX sentence-embedding model file of the optional dense encoder (hybrid search)",
    "knowledge.dense-tokenizer": "tokenizer.json of the dense model",
    "qdrant-url": "Qdrant server URL (QDRANT_URL also works); unset means local mode under $home/qdrant",
}


def field_name(key: str) -> str:
    """The settings field (and, upper-cased with the prefix, the variable) of a configuration key."""
    return key.lower().replace(".", "_").replace("-", "_")


def env_name(key: str) -> str:
    return "SAIP_" + field_name(key).upper()


_KEY_OF_FIELD = {field_name(key): key for key in KEYS}


def key_of(field: str) -> str:
    """The `saip.yaml` key of a settings field, for messages that tell the person what to edit."""
    return _KEY_OF_FIELD[field]


class ConfigurationError(Exception):
    """The configuration cannot be used; the message names the key or file to fix."""


def _split_list(value: Any) -> Any:
    """Accept a list, a JSON list, or comma-separated text (what a person types in a variable)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


StrList = Annotated[list[str], NoDecode, BeforeValidator(_split_list)]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in data.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping) and field_name(key) not in _KEY_OF_FIELD:
            yield from _flatten(value, key + ".")
        else:
            yield key, value


def config_file() -> Path | None:
    """The `saip.yaml` in use: `SAIP_CONFIG` (which must exist), else `./saip.yaml` when present."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigurationError(f"{CONFIG_ENV} names {path}, which is not a file")
        return path
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.is_file() else None


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's keys as field names; unknown keys are refused with the nearest known key."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{path} must hold a mapping of keys, not {type(data).__name__}")
    values: dict[str, Any] = {}
    for key, value in _flatten(data):
        name = field_name(key)
        if name not in _KEY_OF_FIELD:
            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else "; see docs/configuration.md for the keys"
            raise ConfigurationError(f"{path}: unknown key '{key}'{hint}")
        values[name] = value
    return values


class _YamlSource(PydanticBaseSettingsSource):
    """Values from `saip.yaml`, below the environment in precedence."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        path = config_file()
        self._values = read_config_file(path) if path else {}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return {name: value for name, value in self._values.items() if name in self.settings_cls.model_fields}


class SaipSettings(BaseSettings):
    """The settings every service reads; each service extends it with its own keys."""

    model_config = SettingsConfigDict(env_prefix="SAIP_", extra="ignore", validate_default=True)
    service: ClassVar[str] = "saip"

    home: Path = Field(default=Path(".saip"))
    nats_url: str = "nats://127.0.0.1:4222"
    nats_replicas: int = Field(default=1, ge=1, le=5)
    log_level: str = Field(default="INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$")
    audit_max_age_hours: float = Field(default=720.0, gt=0)
    audit_max_bytes: int = Field(default=1 << 30, ge=1 << 20)

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
                key = _KEY_OF_FIELD.get(str(error["loc"][0]), str(error["loc"][0]))
                # Inside a list of items (knowledge.documents), say which item and which of its keys.
                inner = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"][1:])
                problems.append(f"{key}{inner} ({env_name(key)}): {message}")
            raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from None

    def secret(self, field: str) -> str | None:
        value = getattr(self, field)
        if isinstance(value, SecretStr):
            return value.get_secret_value() or None
        return None

    def configured(self, field: str) -> bool:
        """Whether the person set this key (in saip.yaml or the environment), which makes it read-only to the AI."""
        return field in self.model_fields_set
