"""The authored tools of a bundle: each spec parsed as the tools service parses it, run in the same sandbox
(`saip.sandbox`), arguments checked against its input schema, resolved secrets masked in every answer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from saip.common.netguard import NetworkMode
from saip.common.secret_source import Secret, SecretSource
from saip.sandbox.pool import Sandbox
from saip.shipped.answers import Answer
from saip.tools import placeholders
from saip.tools import spec as specs
from saip.tools.errors import InvalidSpec
from saip.tools.runs import parse_arguments, reply_of


class AuthoredTool:
    def __init__(self, part: Mapping[str, Any], sandbox: Sandbox, environ: Mapping[str, str]) -> None:
        self.spec = specs.parse(part["spec"])
        self._sandbox = sandbox
        self._secrets = _secrets(self.spec, environ)

    @property
    def name(self) -> str:
        return self.spec.name

    def missing(self) -> list[str]:
        """The ${ENV} references this tool needs that are unset where the server runs."""
        return list(placeholders.resolve(self.spec, self._secrets).missing)

    def listed(self) -> types.Tool:
        spec = self.spec
        open_world = spec.sandbox.network_mode is not NetworkMode.BLOCKED
        read_only = not open_world and not spec.destructive
        return types.Tool(
            name=spec.name,
            title=spec.title or None,
            description=spec.description,
            input_schema=spec.input_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent or read_only,
                open_world_hint=open_world,
            ),
        )

    async def call(self, arguments: dict[str, Any]) -> Answer:
        try:
            checked = parse_arguments(self.spec, json.dumps(arguments))
        except InvalidSpec as exc:
            return Answer(str(exc), None, is_error=True)
        resolved = placeholders.resolve(self.spec, self._secrets)
        if resolved.missing:
            return Answer(
                f"'{self.name}' needs environment variables that are not set for this server: "
                f"{', '.join(resolved.missing)}. "
                "Ask the person who runs it to set them and restart it.",
                None,
                is_error=True,
            )
        bound = {param.name: None for param in self.spec.params} | checked
        job = self._sandbox.job(
            self.spec.code,
            bound,
            resolved.statics,
            network_mode=self.spec.sandbox.network_mode.value,
            hosts_allow=self.spec.sandbox.hosts_allow,
            secrets=resolved.secrets,
        )
        reply = reply_of(self.name, await self._sandbox.run(job), resolved.masker)
        structured = json.loads(reply.structured_json) if reply.structured_json else None
        return Answer(reply.text, structured, is_error=reply.is_error)


def _secrets(spec: specs.ToolSpec, environ: Mapping[str, str]) -> SecretSource:
    """The tool's `${NAME}` requirements, read from the environment the person runs the server in, each bound to the
    hosts the tool's sandbox allows (what its Local Pass and risk were judged on): the code holds a placeholder, and
    the sandbox's fetch sends the value only to those hosts, as in the tools service."""
    hosts = tuple(host.lower() for host in spec.sandbox.hosts_allow if host != "*")
    return SecretSource(
        {name: Secret(name, environ.get(name, ""), hosts, name) for name in spec.env_references()},
        key="the shipped server's environment",
    )
