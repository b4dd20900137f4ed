"""How deep a JSON document may nest, checked where one enters saip: a tool's arguments, a spec, a served call's
arguments. Python's parser, pydantic and jsonschema recurse per level, so a document nested a few thousand deep
fails somewhere inside with a RecursionError that a service can only report as an internal failure (the AI then
reads "the service is not reachable"). Checked here, it is refused with a sentence instead.
"""

from __future__ import annotations

import json
from typing import Any

# Far deeper than any real argument, spec or result, far shallower than the recursion any reader of it needs.
MAX_DEPTH = 64


class TooDeep(ValueError):
    """A document nested deeper than saip reads; the message says how deep and what to send instead."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the JSON is nested more than {limit} levels deep, which saip does not read; send flatter data "
            "(a list of items rather than items inside items)"
        )


def depth(value: Any) -> int:
    """The nesting depth of a JSON-like value (a scalar is 0, `[1]` is 1), without recursing."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        pending.extend((child, level + 1) for child in children)
    return deepest


def check(value: Any, limit: int = MAX_DEPTH) -> Any:
    """`value` itself, or TooDeep when it nests deeper than `limit`."""
    if depth(value) > limit:
        raise TooDeep(limit)
    return value


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """json.loads, refusing a document deeper than `limit` as TooDeep (a ValueError, like a syntax error)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(limit) from None
    return check(value, limit)
