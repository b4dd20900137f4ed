"""Bundles the shipped and shipyard tests build on (it holds no tests itself): a sealed one-tool bundle, written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from saip.shipped import bundle
from saip.tools import spec as specs
from tests.unit.tools.specs import document


def sealed(name: str = "ops", requirements: list[str] | None = None, **changes: Any) -> dict[str, Any]:
    spec = specs.parse(document())
    return bundle.seal(
        {
            "format": bundle.FORMAT,
            "name": name,
            "description": "Adds numbers.",
            "transport": "streamable-http",
            "version": 1,
            "shippedAt": "2026-12-01T12:00:00+00:00",
            "requirements": requirements or [],
            "riskLevel": 0,
            "tools": [
                {
                    "kind": "authored",
                    "name": spec.name,
                    "spec": spec.document(),
                    "riskLevel": 0,
                    "definitionSha256": spec.sha256(),
                }
            ],
            **changes,
        }
    )


def written(folder: Path, **changes: Any) -> bundle.Bundle:
    (folder / bundle.SNAPSHOTS).mkdir(parents=True)
    return bundle.write(folder, sealed(**changes))
