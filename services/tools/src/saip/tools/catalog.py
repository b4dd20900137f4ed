"""The bundled starter catalog (read-only tools shipped in `catalog/*.json`) and the tools declared in saip.yaml."""

from __future__ import annotations

from importlib import resources
from typing import Any

from saip.common.settings import declared_by_name
from saip.tools import spec as specs
from saip.tools.errors import ToolsError
from saip.tools.spec import ToolSpec


def bundled() -> dict[str, ToolSpec]:
    """Every spec in the package's catalog folder, by name. A bad file is a packaging bug: it fails loudly."""
    tools: dict[str, ToolSpec] = {}
    for item in sorted(resources.files("saip.tools").joinpath("catalog").iterdir(), key=lambda item: item.name):
        if not item.name.endswith(".json"):
            continue
        tool = specs.parse(item.read_text(encoding="utf-8"))
        if f"{tool.name}.json" != item.name:
            raise ValueError(f"catalog file {item.name} holds the tool '{tool.name}'; name the file after the tool")
        tools[tool.name] = tool
    return tools


def declared(documents: list[dict[str, Any]], key: str) -> dict[str, ToolSpec]:
    """The tools declared in configuration, validated at start; a bad one stops the service naming the key."""
    return declared_by_name(documents, key, specs.parse, lambda tool: tool.name, what="tool", refused=ToolsError)
