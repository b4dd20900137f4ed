"""The tools service's settings: where it listens, the sandbox's limits, and the tools declared in configuration."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import BeforeValidator, Field
from pydantic_settings import NoDecode

from saip.common import jsondepth
from saip.common.secret_source import SecretSource
from saip.common.settings import Port, Reads, SaipSettings, StrList, listed_environment, service_keys
from saip.tools import catalog
from saip.tools.upstream import registry

DECLARED_KEY = "tools.declared"
SECRETS_KEY = "tools.secrets"
UPSTREAM_SERVERS_KEY = "tools.upstream-servers"


def _json_list(value: Any) -> Any:
    """SAIP_TOOLS_DECLARED holds a JSON list; saip.yaml holds a YAML list."""
    if isinstance(value, str):
        return jsondepth.loads(value) if value.strip() else []
    return value


def _risk_level(value: Any) -> Any:
    """A risk level as saip writes it (`L3`) or as its number (`3`)."""
    text = str(value).strip()
    number = text[1:] if text[:1] in ("L", "l") else text
    if isinstance(value, bool) or not number.isdigit() or not 1 <= int(number) <= 5:
        raise ValueError(f"'{value}' is not a risk level: give L1 to L5 (or 1 to 5)")
    return int(number)


# A risk level, 1 (L1) to 5 (L5): saip.yaml and SAIP_* may give it either way.
RiskLevel = Annotated[int, BeforeValidator(_risk_level)]


class ToolsSettings(SaipSettings):
    """`tools.*` keys, on top of what every service reads."""

    service: ClassVar[str] = "tools"
    # The service's keys: a parallel table, declared the same way in every service (docs/architecture.md).
    keys: ClassVar[Mapping[str, str]] = service_keys(
        endpoint="tools",
        own={
            "tools.sandbox-workers": "Worker processes that run tool code (each runs one call at a time)",
            "tools.sandbox-spares": "Isolates each worker keeps ready for its next calls (each serves one call)",
            "tools.sandbox-timeout-seconds": "Wall-clock limit of one tool run",
            "tools.sandbox-memory-mb": (
                "Memory cap of one tool run (every allocation of its JavaScript, array buffers too)"
            ),
            "tools.declared": "Tools declared in configuration (a list of tool specs): served, read-only to the AI",
            SECRETS_KEY: "File of the secrets tool code may send, each bound to its hosts; the only source of ${NAME}",
            UPSTREAM_SERVERS_KEY: (
                "Upstream MCP servers declared in configuration (a list, docs/upstream.md): read-only"
            ),
            "tools.upstream-connect-timeout-seconds": "How long connecting to an upstream (and each listing) may take",
            "tools.upstream-call-timeout-seconds": "How long one proxied call of an upstream tool may take",
            "tools.upstream-max-result-bytes": (
                "The most of an upstream tool's result passed on (cut with a note beyond)"
            ),
            "tools.upstream-max-response-bytes": (
                "The most bytes read of one upstream response; the read stops there and the request fails"
            ),
            "tools.upstream-parked-max": (
                "The most proxied calls a tools replica holds parked at an upstream's question for a 2026-07-28 caller"
            ),
            "tools.upstream-max-tools": (
                "The most tools an upstream server may list (a longer list fails its connection)"
            ),
            "tools.upstream-refresh-seconds": "How often a connection lists its server's tools without a list_changed",
            "tools.upstream-gateway-urls": (
                "Where saip's own /mcp listens, refused as an upstream at any address of its place before connecting "
                "(saip run adds its gateway's; the handshake refuses the others)"
            ),
            "tools.upstream-variables": "Environment variables an upstream server's ${NAME} may read; no other",
            "expose.risk-cap": (
                "The highest inherent risk level an exposed upstream tool may have (HITL does not lift it)"
            ),
        },
    )
    # Besides its keys' variables: those the secrets file reads (`env:`) and those tools.upstream-variables lists.
    reads: ClassVar[Reads] = Reads(variable_lists=("tools_upstream_variables",), secrets_files=("tools_secrets",))

    tools_host: str = "127.0.0.1"
    tools_port: Port = 50051
    tools_metrics_port: Port = 9101
    tools_sandbox_workers: int = Field(default=2, ge=1, le=64)
    # Each spare holds memory and address space while it waits (its heap is capped like a call's; docs/tools.md).
    tools_sandbox_spares: int = Field(default=1, ge=0, le=8)
    tools_sandbox_timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    tools_sandbox_memory_mb: int = Field(default=128, ge=16, le=4096)
    tools_declared: Annotated[list[dict[str, Any]], NoDecode, BeforeValidator(_json_list)] = Field(default_factory=list)
    tools_secrets: Path | None = None
    tools_upstream_servers: Annotated[list[dict[str, Any]], NoDecode, BeforeValidator(_json_list)] = Field(
        default_factory=list
    )
    tools_upstream_connect_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    tools_upstream_call_timeout_seconds: float = Field(default=60.0, gt=0, le=1800)
    tools_upstream_max_result_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    tools_upstream_max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=64 * 1024, le=256 * 1024 * 1024)
    # Each parked call holds its upstream request open (a connection's stream, a task) until answered or expired.
    tools_upstream_parked_max: int = Field(default=100, ge=1, le=10_000)
    tools_upstream_max_tools: int = Field(default=1000, ge=1, le=100_000)
    tools_upstream_refresh_seconds: float = Field(default=30.0, gt=0, le=3600)
    # The gateway's own default address (gateway.host, gateway.port); `saip run`, compose and k8s give where theirs is.
    tools_upstream_gateway_urls: StrList = Field(default_factory=lambda: ["http://127.0.0.1:8282/mcp"])
    # An upstream's headers, URL and stdio environment name variables; only these are read (and `saip run` hands the
    # tools service these besides its own settings): a reference can never reach another variable of the service.
    tools_upstream_variables: StrList = Field(default_factory=list)
    expose_risk_cap: RiskLevel = 3

    @classmethod
    def load(cls, **overrides: Any) -> Self:
        """Read and validate, the declared tools included: a bad one is a ConfigurationError naming its place under
        tools.declared, before anything is opened."""
        settings = super().load(**overrides)
        catalog.declared(settings.tools_declared, DECLARED_KEY)
        settings.secrets()
        registry.declared(settings.tools_upstream_servers, UPSTREAM_SERVERS_KEY)
        return settings

    def upstream_variables(self, environ: Mapping[str, str]) -> dict[str, str]:
        """What an upstream server's references may read: the listed variables, as set now."""
        return listed_environment(self.tools_upstream_variables, environ)

    def secrets(self) -> SecretSource:
        """The secrets file, read now: a malformed one is a ConfigurationError naming tools.secrets."""
        return SecretSource.load(self.tools_secrets, SECRETS_KEY)
