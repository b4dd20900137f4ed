"""What a run makes of a tool's `${NAME}` references: each replaced by a placeholder made for the run, never by the
secret's value, which only the sandbox's fetch substitutes, in requests to the hosts the secret is bound to
(`saip.common.netguard.Binding`); and the references no secret answers, which the run does not start with.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from secrets import token_hex

from saip.common.masking import Masker
from saip.common.netguard import Binding
from saip.common.secret_source import SecretSource
from saip.tools.spec import ENV_REFERENCE, ToolSpec


@dataclass(frozen=True)
class Resolved:
    """A run's static values: each ${NAME} replaced by a placeholder made for this run, the secrets the sandbox's
    fetch substitutes for them (in requests to their hosts only), and the references no secret answers."""

    statics: dict[str, str]
    secrets: tuple[Binding, ...] = ()
    missing: tuple[str, ...] = ()

    @functools.cached_property
    def masker(self) -> Masker:
        """Masks the values (a bound host may echo one) and the placeholders of this run; made once a run, for the
        risk events of the run and for what is answered of it (making one costs more than most of its uses)."""
        return Masker([text for secret in self.secrets for text in (secret.value, secret.marker)])


def resolve(spec: ToolSpec, source: SecretSource) -> Resolved:
    """The static values as the code sees them: a secret's value never, an unguessable placeholder instead."""
    missing = source.missing(spec.env_references())
    if missing:
        return Resolved({}, missing=tuple(missing))
    markers = {name: f"saip-secret-{token_hex(16)}" for name in spec.env_references()}
    statics = {
        name: ENV_REFERENCE.sub(lambda match: markers[match.group(1)], value)
        for name, value in spec.static_variables.items()
    }
    return Resolved(statics, tuple(source.binding(name, marker) for name, marker in markers.items()))
