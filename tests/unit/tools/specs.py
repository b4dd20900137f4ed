"""Tool specs the tools tests build on (it holds no tests itself)."""

from __future__ import annotations

import json
from typing import Any

ADD_CODE = "return { sum: a + b };"


def document(name: str = "adder", **changes: Any) -> dict[str, Any]:
    """A valid spec: two required integer parameters with test values, no sandbox overrides."""
    spec: dict[str, Any] = {
        "name": name,
        "description": "Adds two integers and returns their sum.",
        "params": [
            {"name": "a", "description": "First addend", "type": "integer", "required": True, "testValue": 2},
            {"name": "b", "description": "Second addend", "type": "integer", "required": True, "testValue": 3},
        ],
        "code": ADD_CODE,
    }
    spec.update(changes)
    return spec


def text(name: str = "adder", **changes: Any) -> str:
    return json.dumps(document(name, **changes))
