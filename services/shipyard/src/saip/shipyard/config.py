"""The shipyard service's settings: where it listens, where it reaches the services whose tools it ships, how it runs
shipped servers, and the shipped servers declared in configuration (read-only to the AI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from saip.common.settings import (
    DeclaredItem,
    Port,
    Reads,
    SaipSettings,
    StrList,
    address_keys,
    is_own_variable,
    listed_environment,
    service_keys,
)
from saip.shipped.bundle import TRANSPORTS
from saip.shipyard.targets import TARGETS

SERVERS_KEY = "shipyard.servers"


class DeclaredServer(DeclaredItem):
    """One entry of shipyard.servers: what to ship (the proposal an AI would make) and, with `target`, where to run it.
    The ship's own rules (a Local Pass of each authored tool's current revision, the name's) are checked when the
    shipyard ships it."""

    name: str = Field(min_length=1, max_length=40)
    description: str = Field(min_length=1, max_length=1024)
    tools: list[str] = Field(min_length=1, max_length=64)
    transport: Literal[TRANSPORTS] = TRANSPORTS[0]  # type: ignore[valid-type]  # the bundle's own list
    target: Literal[TARGETS] | None = None  # type: ignore[valid-type]  # unset: shipped, not run
    port: int = Field(default=0, ge=0, le=65535)  # 0: a free one (local), the container's port (compose)


class ShipyardSettings(SaipSettings):
    """`shipyard.*` keys, on top of what every service reads."""

    service: ClassVar[str] = "shipyard"
    # The service's keys: a parallel table, declared the same way in every service (docs/architecture.md).
    keys: ClassVar[Mapping[str, str]] = service_keys(
        endpoint="shipyard",
        own={
            **address_keys("tools", "knowledge"),
            "shipyard.image": "Image of the shipped-server runtime the compose and kubernetes targets run",
            "shipyard.log-lines": "Log lines kept of each locally running shipped server (masked; older lines drop)",
            "shipyard.restart-limit": "Crash restarts of a local shipped server in a row before it is marked failed",
            "shipyard.kube-context": "kubectl context the kubernetes target applies to; the current context when unset",
            "shipyard.variables": "Environment variables the shipped servers may be given (their ${ENV} requirements)",
            SERVERS_KEY: "Shipped servers declared in configuration, shipped (and run on `target`) at start: read-only",
        },
    )
    # Besides its keys' variables: those listed for the shipped servers.
    reads: ClassVar[Reads] = Reads(variable_lists=("shipyard_variables",))

    shipyard_host: str = "127.0.0.1"
    shipyard_port: Port = 50053
    shipyard_metrics_port: Port = 9103
    tools_addr: str | None = None
    knowledge_addr: str | None = None
    shipyard_image: str = "saip/shipped:0.1.0"
    shipyard_log_lines: int = Field(default=500, ge=10, le=100_000)
    shipyard_restart_limit: int = Field(default=5, ge=0, le=100)
    shipyard_kube_context: str | None = None
    # A shipped server's `${ENV}` requirements are read from the shipyard's environment, and only the variables the
    # person lists here are: `saip run` hands the shipyard these and its own settings, never the whole shell.
    shipyard_variables: StrList = Field(default_factory=list)
    shipyard_servers: list[DeclaredServer] = Field(default_factory=list)

    @field_validator("shipyard_variables")
    @classmethod
    def _not_saip_own(cls, names: list[str]) -> list[str]:
        own = [name for name in names if is_own_variable(name)]
        if own:
            raise ValueError(
                f"{', '.join(own)} are saip's own settings, which are never given to a shipped server; "
                "give the value another variable's name"
            )
        return names

    @field_validator("shipyard_servers")
    @classmethod
    def _named_once(cls, servers: list[DeclaredServer]) -> list[DeclaredServer]:
        names = [server.name.strip() for server in servers]
        doubled = sorted({name for name in names if names.count(name) > 1})
        if doubled:
            raise ValueError(f"{', '.join(doubled)} are declared more than once; declare each server once")
        return servers

    def shipped_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """What of `environ` a shipped server may be given: the listed variables only."""
        return listed_environment(self.shipyard_variables, environ)
