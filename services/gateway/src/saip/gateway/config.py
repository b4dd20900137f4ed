"""The gateway's settings: its ports, the tokens, the management surface and the approval gate."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from saip.common.approval_form import MIN_ANSWER_SECONDS
from saip.common.netguard import NetworkMode
from saip.common.settings import ConfigurationError, SaipSettings, StrList, address_keys, field_name, service_keys
from saip.gateway.oauth import redirects

# What management.tools may name; mcp-register is opt-in (left out when the list is empty).
CATEGORIES = ("tools", "mcp", "mcp-register", "expose", "knowledge", "shipyard", "monitor", "chat")
DEFAULT_OFF_CATEGORIES = frozenset({"mcp-register"})
# The bounds of mcp-server.max-result-bytes, here rather than beside the results they bound (surface/results.py): the
# settings are read before anything opens (and by `make proto`, for the key manifest), and the results module imports
# the MCP SDK's types, which reading them does not need.
RESULT_LIMIT = 512 * 1024
# The largest limit that still fits the SDK client's 1 MiB SSE event, with room for the JSON-RPC framing.
MAX_RESULT_LIMIT = 1_000_000


class ApprovalMode(StrEnum):
    DESTRUCTIVE = "destructive"
    ALL = "all"
    NONE = "none"


class Transport(StrEnum):
    HTTP = "http"
    STDIO = "stdio"


class PreRegistered(BaseModel):
    """One entry of oauth.clients: a client registered in configuration (a public client: PKCE, no secret)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=lambda name: name.replace("_", "-"), populate_by_name=True, frozen=True
    )

    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._~-]+$")
    name: str = Field(min_length=1, max_length=200)
    redirect_uris: list[str] = Field(min_length=1, max_length=20)

    @field_validator("redirect_uris")
    @classmethod
    def _acceptable(cls, value: list[str]) -> list[str]:
        problem = redirects.problems(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class GatewaySettings(SaipSettings):
    service: ClassVar[str] = "gateway"
    keys: ClassVar[Mapping[str, str]] = service_keys(
        endpoint=None,  # it serves HTTP, not gRPC: gateway.host and gateway.port are among its own keys
        own={
            "admin-token": "Bearer token of the REST API (the person's; never the MCP token)",
            "mcp-server.auth-token": "The MCP bearer token; when set here it cannot be changed through the API",
            "mcp-server.transport": "http (default) or stdio; the management surface is never offered over stdio",
            "mcp-server.max-result-bytes": (
                "Largest tool result /mcp sends, in bytes as it travels; a larger one is cut with a note"
            ),
            "management.enabled": "Master switch of the management tools",
            "management.tools": "Categories offered; empty means every category but mcp-register",
            "management.exclude": "Management tool names left out",
            "management.approval": "Which levels ask the person: destructive, all or none",
            "management.rate-limit": "Management calls one credential may make per window; 0 for no limit",
            "management.question-limit": (
                "Approval questions one credential may put to the person per window; 0 for no limit"
            ),
            "management.limit-window-seconds": "The window of management.rate-limit and management.question-limit",
            "management.out-of-band-approvals": (
                "Park a question to a client that cannot ask (no elicitation) for the person (saip approvals) "
                "instead of denying it"
            ),
            "management.min-answer-ms": (
                "An answer a client gives sooner than this after the question (ms) is the client's, not a person's: "
                "the call is denied, or parked for the person with out-of-band approvals on; 0 turns the rule off"
            ),
            "hitl.approval-wait-seconds": "How long an approval question waits for the person",
            "hitl.progress-interval-seconds": "How often a waiting question reports progress (2025-11-25 clients)",
            "approval.sealing-key": "Secret (32+ bytes) sealing 2026-07-28 approval state; shared by every gateway",
            "gateway.host": "Interface the gateway listens on",
            "gateway.port": "Port of /mcp, /api/v1, /healthz and /metrics",
            "gateway.allowed-hosts": "Host headers /mcp accepts (DNS-rebinding protection), host:port or host:*",
            "gateway.replica": "Name of this gateway replica in audit records; the host name and pid when unset",
            "console.dir": "Folder of the built web console served at /console; unset: the one `make install` builds",
            "console.idle-minutes": "A console session ends after this many minutes without a request",
            "console.session-hours": "A console session ends this many hours after sign-in, however busy",
            "gateway.public-url": (
                "The URL clients reach the gateway at (https://saip.example.com): the OAuth issuer, and /mcp's "
                "resource under it; unset: each request's own scheme and Host (one of gateway.allowed-hosts)"
            ),
            "oauth.enabled": (
                "Make saip the OAuth 2.1 authorization server of /mcp (the person consents in the console)"
            ),
            "oauth.dynamic-registration": (
                "Accept Dynamic Client Registration (RFC 7591) at /register while OAuth is on"
            ),
            "oauth.clients": (
                "OAuth clients registered in configuration: id, name, redirect-uris (public clients, PKCE)"
            ),
            "oauth.access-token-seconds": "How long an OAuth access token is accepted",
            "oauth.refresh-token-days": "How long an OAuth refresh token (and the grant it keeps alive) lasts unused",
            "oauth.consent-seconds": "How long an authorization request waits for the person's consent",
            "oauth.metadata-network-mode": (
                "The network guard's mode for fetching Client ID Metadata Documents: strict (public addresses), "
                "allowlist (oauth.metadata-hosts-allow only) or open"
            ),
            "oauth.metadata-hosts-allow": "The hosts Client ID Metadata Documents may come from in allowlist mode",
            "oauth.metadata-ca-file": (
                "PEM file of certificate authorities trusted, besides the public ones, for Client ID Metadata Documents"
            ),
            "oauth.token-failure-limit": (
                "Failed /token requests one address may make per minute; more are refused until the minute ends"
            ),
            **address_keys("audit", "tools", "knowledge", "shipyard"),
            "audit.spool-dir": "Where a gateway keeps audit records while NATS is unreachable",
            "chat.base-url": (
                "Base URL of the OpenAI-compatible chat completions endpoint saip_chat_ask talks to "
                "(e.g. http://127.0.0.1:11434/v1 for Ollama); unset: no chat model"
            ),
            "chat.model": "The model saip_chat_ask asks (it must support tool calling)",
            "chat.api-key": (
                "The endpoint's API key as a ${ENV} reference to a variable exported when starting saip "
                "(or the key itself); unset for endpoints without keys"
            ),
        },
    )

    gateway_host: str = "127.0.0.1"
    gateway_port: int = Field(default=8282, ge=1, le=65535)
    gateway_allowed_hosts: StrList = Field(default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*"])
    gateway_replica: str = Field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    gateway_public_url: str | None = None
    admin_token: SecretStr
    mcp_server_auth_token: SecretStr | None = None
    mcp_server_transport: Transport = Transport.HTTP
    # One answer is one SSE event, and the MCP SDK's client drops an event above 1 MiB.
    mcp_server_max_result_bytes: int = Field(default=RESULT_LIMIT, ge=4096, le=MAX_RESULT_LIMIT)
    management_enabled: bool = True
    management_tools: StrList = Field(default_factory=list)
    management_exclude: StrList = Field(default_factory=list)
    management_approval: ApprovalMode = ApprovalMode.DESTRUCTIVE
    # Counted per credential; a caller without one is counted as it names itself (saip.gateway.surface.limits).
    management_rate_limit: int = Field(default=300, ge=0, le=1_000_000)
    management_question_limit: int = Field(default=30, ge=0, le=100_000)
    management_limit_window_seconds: float = Field(default=60.0, gt=0, le=86_400)
    # Off: such a question is DENIED, as the seed says; on: the person answers it out of band (surface.out_of_band).
    management_out_of_band_approvals: bool = False
    # Headless clients answer a question by themselves within about 20 ms; the fastest person who reads it and moves
    # to a button takes well over a second (docs/management.md, "Who answered").
    management_min_answer_ms: int = Field(default=round(MIN_ANSWER_SECONDS * 1000), ge=0, le=60_000)
    hitl_approval_wait_seconds: float = Field(default=180.0, gt=0, le=3600)
    hitl_progress_interval_seconds: float = Field(default=10.0, gt=0, le=600)
    approval_sealing_key: SecretStr
    console_dir: Path | None = None
    console_idle_minutes: float = Field(default=30.0, gt=0, le=24 * 60)
    console_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    audit_addr: str = "127.0.0.1:50054"
    # The publishing services; an unset address means that service's tools are not served.
    tools_addr: str | None = None
    knowledge_addr: str | None = None
    shipyard_addr: str | None = None
    audit_spool_dir: Path | None = None
    chat_base_url: str | None = None
    chat_model: str | None = None
    chat_api_key: SecretStr | None = None
    oauth_enabled: bool = False
    oauth_dynamic_registration: bool = True
    oauth_clients: list[PreRegistered] = Field(default_factory=list)
    oauth_access_token_seconds: int = Field(default=3600, ge=60, le=86_400)
    oauth_refresh_token_days: float = Field(default=30.0, gt=0, le=365)
    oauth_consent_seconds: float = Field(default=600.0, ge=30, le=3600)
    oauth_metadata_network_mode: NetworkMode = NetworkMode.STRICT
    oauth_metadata_hosts_allow: StrList = Field(default_factory=list)
    oauth_metadata_ca_file: Path | None = None
    oauth_token_failure_limit: int = Field(default=10, ge=1, le=10_000)

    @field_validator("management_tools")
    @classmethod
    def _known_categories(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown categories {unknown}; choose from {list(CATEGORIES)}")
        return value

    @field_validator("admin_token", "approval_sealing_key")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 32:
            raise ValueError("must be at least 32 characters of secret randomness")
        return value

    @field_validator("mcp_server_auth_token")
    @classmethod
    def _strong_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and 0 < len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters; `saip token rotate` generates a strong one instead")
        return value

    @model_validator(mode="after")
    def _tokens_differ(self) -> GatewaySettings:
        mcp = self.mcp_server_auth_token
        if mcp is not None and mcp.get_secret_value() == self.admin_token.get_secret_value():
            raise ValueError("admin-token and mcp-server.auth-token must differ: the AI never gets the admin token")
        return self

    @field_validator("gateway_public_url")
    @classmethod
    def _plain_origin(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(f"must be an http(s) URL with a host and no query or fragment, not '{value}'")
        return value.rstrip("/")

    @field_validator("oauth_metadata_ca_file")
    @classmethod
    def _readable_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"{value} is not a file; name a PEM file of certificate authorities")
        return value

    @property
    def categories(self) -> frozenset[str]:
        """The categories offered: management.tools, or every category but the opt-in ones when it is empty."""
        if self.management_tools:
            return frozenset(self.management_tools)
        return frozenset(CATEGORIES) - DEFAULT_OFF_CATEGORIES

    @property
    def configured_token(self) -> str | None:
        """The MCP token set in saip.yaml or SAIP_MCP_SERVER_AUTH_TOKEN; such a token is read-only to the API."""
        return self.secret("mcp_server_auth_token")

    def address(self, service: str) -> str | None:
        """The address of a service the gateway calls (`<service>.addr`); None when it is not configured."""
        field = f"{field_name(service)}_addr"
        if field not in type(self).model_fields:
            raise ConfigurationError(f"the gateway has no {service}.addr key: declare it in GatewaySettings")
        value = getattr(self, field)
        return str(value) if value else None

    def chat_key(self) -> str | None:
        """chat.api-key's value. A `${NAME}` reference (in saip.yaml or SAIP_CHAT_API_KEY) was resolved when the
        settings were read, from the environment saip was started in; an unset NAME stopped the start naming it."""
        return self.secret("chat_api_key")

    @property
    def spool_dir(self) -> Path:
        return self.audit_spool_dir or self.home / "spool" / "gateway"
