"""The registry of upstream MCP servers: the servers in the saip-servers bucket (`server.<id>`, catalog and custom
ones) and the servers declared in configuration (`tools.upstream-servers`, read-only to the AI).

A definition is validated before it is stored: an id of lower-case letters, digits and dashes; a URL for the HTTP
transports and a command for stdio; header and environment values that are `${ENV_NAME}` references (after an
optional scheme word, `Bearer ${TOKEN}`), since secrets never pass through the interface. The references are
resolved from the tools service's own environment only when it connects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from saip.common import literals
from saip.common.literals import SECRET_VALUE
from saip.common.masking import is_secret_name
from saip.common.settings import declared_by_name, is_own_variable
from saip.tools.errors import InvalidSpec, LiteralSecret, RuleRefused, ServerExists, ServerNotFound, ToolsError
from saip.tools.ports import Records
from saip.v1 import upstream_pb2

# Where the person puts what an upstream's headers, URL or environment reference, as a refusal names it.
UPSTREAM_SOURCE = "the tools service's environment (a variable exported where it runs)"
SERVER_PREFIX = "server."
SERVER_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
# A header or variable value: one reference, optionally after the scheme word an Authorization header carries.
REFERENCE_VALUE = re.compile(r"^(?:(?:Bearer|Basic|Token|token)\s+)?\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

TRANSPORTS: dict[str, upstream_pb2.Transport] = {
    "streamable-http": upstream_pb2.TRANSPORT_STREAMABLE_HTTP,
    "sse": upstream_pb2.TRANSPORT_SSE,
    "stdio": upstream_pb2.TRANSPORT_STDIO,
}
TRANSPORT_WORDS = {value: word for word, value in TRANSPORTS.items()}
TRUSTS: dict[str, upstream_pb2.Trust] = {
    "vendor": upstream_pb2.TRUST_VENDOR,
    "community": upstream_pb2.TRUST_COMMUNITY,
    "unknown": upstream_pb2.TRUST_UNSPECIFIED,
}
TRUST_WORDS = {value: word for word, value in TRUSTS.items()}


def validate(server: upstream_pb2.Server) -> upstream_pb2.Server:
    """The definition as it will be stored, or InvalidSpec / LiteralSecret naming each problem."""
    problems: list[str] = []
    if not SERVER_ID.match(server.id):
        problems.append(f"id '{server.id}' must be lower-case letters, digits and dashes, starting with a letter")
    if not server.name.strip():
        server.name = server.id
    if server.transport == upstream_pb2.TRANSPORT_STDIO:
        if not server.command.strip():
            problems.append("a stdio server needs a command")
        if server.url or server.headers:
            problems.append("a stdio server takes a command, args and env, not a url or headers")
    elif server.transport in (upstream_pb2.TRANSPORT_STREAMABLE_HTTP, upstream_pb2.TRANSPORT_SSE):
        parts = urlsplit(server.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(f"url '{server.url[:200]}' must be an http(s) URL with a host")
        if server.command or server.args or server.env:
            problems.append("an HTTP server takes a url and headers, not a command, args or env")
    else:
        problems.append(f"transport must be one of {', '.join(TRANSPORTS)}")
    if problems:
        raise InvalidSpec(f"Server '{server.id}': " + "; ".join(problems) + ".")
    _require_references(server)
    return server


def _require_references(server: upstream_pb2.Server) -> None:
    """Secrets never pass through the interface: every header and variable is a reference, and a URL parameter
    that looks like a secret is one too."""
    for kind, values, instead in (
        ("Header", server.headers, "as the header's value"),
        ("Environment variable", server.env, "as the variable's value"),
    ):
        for name, value in values.items():
            if REFERENCE_VALUE.match(value):
                continue
            if is_secret_name(name) or SECRET_VALUE.search(value) or kind == "Environment variable":
                where = f"{kind} '{name}' of server '{server.id}'"
                raise LiteralSecret(literals.refusal(where, literals.suggestion(name), UPSTREAM_SOURCE, instead))
            raise InvalidSpec(
                f"{kind} '{name}' of server '{server.id}' holds a literal value; headers are ${{ENV_NAME}} "
                f"references only. Ask the person to set a variable (for example {literals.suggestion(name)}) and use "
                f"'${{{literals.suggestion(name)}}}'."
            )
    for name, value in parse_qsl(urlsplit(server.url).query):
        if (is_secret_name(name) or SECRET_VALUE.search(value)) and not REFERENCE_VALUE.match(value):
            where = f"URL parameter '{name}' of server '{server.id}'"
            raise LiteralSecret(literals.refusal(where, literals.suggestion(name), UPSTREAM_SOURCE, "in the URL"))


def resolve(value: str, environ: Mapping[str, str] | None = None) -> str:
    """A value with its ${ENV} references replaced from the tools service's environment; a variable that is not set
    is a RuleRefused naming it."""
    environ = os.environ if environ is None else environ

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if is_own_variable(name):
            raise RuleRefused(
                f"${{{name}}} names one of saip's own settings, which are never given to an upstream server; ask "
                "the person to export the value under another name, then reference that."
            )
        if name not in environ:
            raise RuleRefused(
                f"The variable {name} is not set for the tools service; ask the person to export it and list it in "
                "tools.upstream-variables, then reconnect."
            )
        return environ[name]

    return REFERENCE.sub(fill, value)


def references_set(server: upstream_pb2.Server, environ: Mapping[str, str] | None = None) -> None:
    """Refuse a server whose variables are not all set for the tools service, naming the first one missing."""
    for value in [server.url, *server.headers.values(), *server.env.values()]:
        resolve(value, environ)


def declared(documents: list[dict[str, Any]], key: str) -> dict[str, upstream_pb2.Server]:
    """The servers declared in configuration, validated at start; a bad one stops the service naming the key."""
    return declared_by_name(documents, key, _configured, lambda server: server.id, what="server", refused=ToolsError)


def _configured(document: dict[str, Any]) -> upstream_pb2.Server:
    return validate(from_document(document, upstream_pb2.SERVER_SOURCE_CONFIGURATION))


def from_document(document: Mapping[str, Any], source: upstream_pb2.ServerSource) -> upstream_pb2.Server:
    """A server from its YAML/JSON shape (saip.yaml, the catalog): the words of docs/upstream.md."""
    known = {"id", "name", "transport", "url", "command", "args", "headers", "env", "docs_url", "trust", "description"}
    unknown = sorted(set(document) - known)
    if unknown:
        raise InvalidSpec(f"Unknown server fields {', '.join(unknown)}; the fields are {', '.join(sorted(known))}.")
    transport = str(document.get("transport", ""))
    trust = str(document.get("trust", "unknown"))
    if transport not in TRANSPORTS:
        raise InvalidSpec(f"transport '{transport}' must be one of {', '.join(TRANSPORTS)}.")
    if trust not in TRUSTS:
        raise InvalidSpec(f"trust '{trust}' must be one of {', '.join(TRUSTS)}.")
    return upstream_pb2.Server(
        id=str(document.get("id", document.get("name", ""))),
        name=str(document.get("name", "")),
        transport=TRANSPORTS[transport],
        url=str(document.get("url", "")),
        command=str(document.get("command", "")),
        args=[str(arg) for arg in document.get("args", [])],
        headers={str(k): str(v) for k, v in dict(document.get("headers", {})).items()},
        env={str(k): str(v) for k, v in dict(document.get("env", {})).items()},
        docs_url=str(document.get("docs_url", "")),
        trust=TRUSTS[trust],
        source=source,
        description=str(document.get("description", "")),
    )


def document_of(server: upstream_pb2.Server) -> dict[str, Any]:
    """A server in its YAML/JSON shape, the one `from_document` reads (what a shipped server's bundle carries):
    only the fields that are set, its headers and variables still `${ENV}` references."""
    document: dict[str, Any] = {
        "id": server.id,
        "name": server.name,
        "transport": TRANSPORT_WORDS[server.transport],
        "url": server.url,
        "command": server.command,
        "args": list(server.args),
        "headers": dict(server.headers),
        "env": dict(server.env),
        "docs_url": server.docs_url,
        "trust": TRUST_WORDS[server.trust],
        "description": server.description,
    }
    return {name: value for name, value in document.items() if value}


def references(server: upstream_pb2.Server) -> list[str]:
    """The `${ENV}` variables the server's definition names (URL, headers, environment), sorted."""
    values = [server.url, *server.headers.values(), *server.env.values()]
    return sorted({name for value in values for name in REFERENCE.findall(value)})


class Registry:
    """The registered servers: configuration's, then the bucket's. Every write names the revision it read."""

    def __init__(self, records: Records, declared: Mapping[str, upstream_pb2.Server], declared_key: str) -> None:
        self.records = records
        self._declared = dict(declared)
        self._declared_key = declared_key

    async def servers(self) -> list[upstream_pb2.Server]:
        stored = []
        for key in await self.records.keys(SERVER_PREFIX):
            server = await self._read(key)
            if server is not None and server.id not in self._declared:
                stored.append(server)
        return [*self._declared.values(), *sorted(stored, key=lambda server: server.id)]

    async def get(self, server_id: str) -> upstream_pb2.Server:
        if server_id in self._declared:
            return self._declared[server_id]
        server = await self._read(SERVER_PREFIX + server_id) if SERVER_ID.match(server_id) else None
        if server is None:
            raise ServerNotFound(server_id)
        return server

    async def add(self, server: upstream_pb2.Server) -> upstream_pb2.Server:
        validate(server)
        if server.id in self._declared:
            raise ServerExists(server.id)
        server.revision = 0
        try:
            server.revision = await self.records.create(SERVER_PREFIX + server.id, server.SerializeToString())
        except ToolsError:
            if await self._read(SERVER_PREFIX + server.id) is not None:
                raise ServerExists(server.id) from None
            raise
        return server

    async def remove(self, server_id: str, expected_revision: int) -> upstream_pb2.Server:
        server = await self.get(server_id)
        if server.source == upstream_pb2.SERVER_SOURCE_CONFIGURATION:
            raise RuleRefused(
                f"'{server_id}' is managed by configuration; remove it under {self._declared_key} in saip.yaml "
                "and restart the tools service."
            )
        await self.records.delete(SERVER_PREFIX + server_id, expected_revision or server.revision)
        return server

    def managed(self, server_id: str) -> bool:
        return server_id in self._declared

    async def _read(self, key: str) -> upstream_pb2.Server | None:
        stored = await self.records.get(key)
        if stored is None:
            return None
        raw, revision = stored
        server = upstream_pb2.Server.FromString(raw)
        server.revision = revision
        return server
