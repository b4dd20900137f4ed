"""The shipyard service's settings: where it listens, where it reaches the services whose tools it ships, and how
it runs shipped servers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, field_validator

from saip.common.settings import (
    Port,
    SaipSettings,
    StrList,
    endpoint_keys,
    is_own_variable,
    listed_environment,
    listed_names,
)

# The same keys, with the same meaning, as the gateway's: one address of each service for every process.
SERVICE_ADDRESS_KEYS = {
    "tools.addr": "Address (host:port) of the tools service's gRPC endpoint; unset serves no authored tools",
    "knowledge.addr": "Address (host:port) of the knowledge service's gRPC endpoint; unset serves no knowledge tools",
}


class ShipyardSettings(SaipSettings):
    """`shipyard.*` keys, on top of what every service reads."""

    service: ClassVar[str] = "shipyard"
    # The service's keys: a parallel table, declared the same way in every service (docs/architecture.md).
    keys: ClassVar[Mapping[str, str]] = {
        **SaipSettings.keys,
        **endpoint_keys("shipyard"),
        **SERVICE_ADDRESS_KEYS,
        "shipyard.image": "Image of the shipped-server runtime the compose and kubernetes targets run",
        "shipyard.log-lines": "Log lines kept of each locally running shipped server (masked; older lines drop)",
        "shipyard.restart-limit": "Crash restarts of a local shipped server in a row before it is marked failed",
        "shipyard.kube-context": "kubectl context the kubernetes target applies to; the current context when unset",
        "shipyard.variables": "Environment variables the shipped servers may be given (their ${ENV} requirements)",
    }

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

    @classmethod
    def launch_variables(cls, values: Mapping[str, Any]) -> set[str]:
        """Besides what the keys name, the variables listed for the shipped servers."""
        return super().launch_variables(values) | listed_names(values, "shipyard_variables")

    def shipped_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """What of `environ` a shipped server may be given: the listed variables only."""
        return listed_environment(self.shipyard_variables, environ)
