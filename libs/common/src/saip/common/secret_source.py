"""The secrets a person makes available to what saip fetches for others: tool code (`tools.secrets`) and knowledge
URLs (`knowledge.secrets`). Nothing else resolves a `${NAME}` written by an AI: not the services' own settings, not
the environment they run in.

The source is a YAML (or JSON) file of names, each with its value, given in the file or read from one named
environment variable of the service at start, and the hosts the value may be sent to (docs/configuration.md, "Tool
and knowledge secrets"):

    WEATHER_API_KEY:
      env: WEATHER_API_KEY          # or value: "..." written in the file (keep it 0600)
      hosts: [api.weather.example, "*.weather.example"]

A secret leaves the service only inside a request to one of its hosts (`netguard.Binding`); saip's own `SAIP_*`
variables can never be named, so a tool cannot be given the tokens that guard saip itself.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from saip.common.configuration import ConfigurationError, is_own_variable
from saip.common.netguard import Binding

logger = logging.getLogger(__name__)

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HOST = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$|^\[[0-9a-f:.]+\]$")
MAX_SECRETS = 256


@dataclass(frozen=True)
class Secret:
    """One secret: its value ("" when the variable it names is not set) and the hosts it may be sent to."""

    name: str
    value: str
    hosts: tuple[str, ...]
    env: str = ""


class SecretSource:
    """The secrets of one file, by name; `key` is the setting that names the file (for messages)."""

    def __init__(self, secrets: Mapping[str, Secret], key: str) -> None:
        self._secrets = secrets
        self.key = key

    @classmethod
    def load(cls, path: Path | None, key: str, environ: Mapping[str, str] | None = None) -> SecretSource:
        """Read the file named by `key` (none: no secrets); a malformed one is a ConfigurationError naming it."""
        if path is None:
            return cls({}, key)
        env = os.environ if environ is None else environ
        secrets = {}
        for name, entry in _entries(path, key).items():
            variable = str(entry.get("env", ""))
            value = env.get(variable, "") if variable else str(entry.get("value", ""))
            if variable and not value:
                logger.warning(
                    "a secret's variable is not set", extra={"secret": name, "variable": variable, "key": key}
                )
            secrets[name] = Secret(name, value, tuple(str(host).lower() for host in entry["hosts"]), variable)
        return cls(secrets, key)

    @property
    def names(self) -> list[str]:
        return sorted(self._secrets)

    def missing(self, names: Iterable[str]) -> list[str]:
        """The names that are not available (not in the file, or their variable is unset)."""
        return sorted({name for name in names if not self.value(name)})

    def value(self, name: str) -> str:
        secret = self._secrets.get(name)
        return secret.value if secret is not None else ""

    def binding(self, name: str, marker: str) -> Binding:
        """The secret as a request carries it; `marker` is what stands for it until a bound host is reached."""
        secret = self._secrets[name]
        return Binding(marker, secret.value, secret.hosts)

    def unavailable(self, names: Iterable[str]) -> str:
        """A sentence saying which references are not available and how the person makes them so."""
        listed = ", ".join("${" + name + "}" for name in sorted(set(names)))
        unset = [self._secrets[name] for name in sorted(set(names)) if name in self._secrets]
        told = "".join(f" ({secret.name} reads {secret.env}, which is not set)" for secret in unset if secret.env)
        return (
            f"{listed} is not a secret made available here{told}. Ask the person to add it to the file named by "
            f"{self.key} (a name with its value or env variable and the hosts it may be sent to; the value never "
            "passes through this interface), restart the service, then try again."
        )


def _entries(path: Path, key: str) -> dict[str, Mapping[str, Any]]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigurationError(f"{key} names {path}, which cannot be read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{key}: {path} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{key}: {path} must hold a mapping of secret names, not {type(data).__name__}")
    if len(data) > MAX_SECRETS:
        raise ConfigurationError(f"{key}: {path} holds more than {MAX_SECRETS} secrets")
    for name, entry in data.items():
        _check(str(name), entry, f"{key}: {path}: secret '{name}'")
    return {str(name): entry for name, entry in data.items()}


def _check(name: str, entry: Any, where: str) -> None:
    if not NAME.match(name):
        raise ConfigurationError(f"{where} is not a name of letters, digits and _ (what ${{NAME}} references)")
    if not isinstance(entry, Mapping) or set(entry) - {"value", "env", "hosts"}:
        raise ConfigurationError(f"{where} must be a mapping of value or env, and hosts")
    if ("value" in entry) == ("env" in entry):
        raise ConfigurationError(f"{where} needs exactly one of value (written here) or env (a variable's name)")
    variable = entry.get("env")
    if variable is not None and (not isinstance(variable, str) or not NAME.match(variable)):
        raise ConfigurationError(f"{where}: env must be the name of an environment variable")
    if isinstance(variable, str) and is_own_variable(variable):
        raise ConfigurationError(
            f"{where}: env names {variable}, one of saip's own settings, which are never given to what saip fetches "
            "for others; set the value in another variable"
        )
    if "value" in entry and not isinstance(entry["value"], str | int):
        raise ConfigurationError(f"{where}: value must be text")
    hosts = entry.get("hosts")
    if not isinstance(hosts, list) or not hosts:
        raise ConfigurationError(f"{where} needs hosts: the host names (or '*.suffix') the value may be sent to")
    for host in hosts:
        if not isinstance(host, str) or not HOST.match(host.lower()):
            raise ConfigurationError(
                f"{where}: hosts entry '{host}' is not a host name or '*.suffix' (a secret bound to every host "
                "would go wherever the code sends it)"
            )


def variables(path: Path | None, key: str) -> list[str]:
    """The environment variables the file reads (the launcher gives the service exactly these besides its own)."""
    if path is None or not path.is_file():
        return []
    return sorted({str(entry["env"]) for entry in _entries(path, key).values() if "env" in entry})
