"""The catalog of upstream servers shipped with saip (`catalog.yaml` beside this module), searchable by words."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import yaml

from saip.tools.upstream.registry import from_document, validate
from saip.v1 import upstream_pb2


@cache
def entries() -> tuple[upstream_pb2.CatalogEntry, ...]:
    """Every entry of the shipped catalog. A bad entry is a packaging bug: it fails loudly."""
    text = resources.files("saip.tools.upstream").joinpath("catalog.yaml").read_text(encoding="utf-8")
    found = []
    for document in yaml.safe_load(text):
        server = validate(from_document(document, upstream_pb2.SERVER_SOURCE_CATALOG))
        found.append(
            upstream_pb2.CatalogEntry(
                name=server.name,
                description=server.description,
                transport=server.transport,
                url=server.url,
                command=server.command,
                args=server.args,
                trust=server.trust,
                docs_url=server.docs_url,
                headers=server.headers,
                env=server.env,
            )
        )
    return tuple(found)


def search(query: str) -> list[upstream_pb2.CatalogEntry]:
    """The entries whose name or description holds every word of the query (all of them for no words), the ones
    whose name matches first."""
    words = [word for word in re.split(r"\W+", query.lower()) if word]
    matched = [
        entry for entry in entries() if all(word in f"{entry.name} {entry.description}".lower() for word in words)
    ]
    return sorted(matched, key=lambda entry: (not any(word in entry.name for word in words), entry.name))


def entry(name: str) -> upstream_pb2.CatalogEntry | None:
    return next((found for found in entries() if found.name == name), None)


def server_of(found: upstream_pb2.CatalogEntry, server_id: str = "") -> upstream_pb2.Server:
    """The server a catalog entry registers (its id the entry's name unless another is given)."""
    return upstream_pb2.Server(
        id=server_id or found.name,
        name=found.name,
        transport=found.transport,
        url=found.url,
        command=found.command,
        args=found.args,
        headers=found.headers,
        env=found.env,
        docs_url=found.docs_url,
        trust=found.trust,
        source=upstream_pb2.SERVER_SOURCE_CATALOG,
        description=found.description,
        catalog_name=found.name,
    )
