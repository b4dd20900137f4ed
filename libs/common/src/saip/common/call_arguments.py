"""A served tool call's arguments (`arguments_json` of common.proto's CallServedToolRequest), read the same way by
every service that serves tools: a JSON object, no deeper than `saip.common.jsondepth` reads, with an empty text
meaning no arguments. What cannot be read is `BadArguments`, whose sentence names the tool and what to send instead:
the calling service returns it as the tool's error result, which the AI reads.
"""

from __future__ import annotations

import json
from typing import Any

from saip.common import jsondepth


class BadArguments(ValueError):
    """A call's arguments that are not a JSON object saip reads; the message names the tool and says what is wrong."""


def read(tool: str, arguments_json: str) -> dict[str, Any]:
    """The arguments of a call of `tool` ("" is none), or BadArguments."""
    try:
        arguments = jsondepth.loads(arguments_json or "{}")
    except jsondepth.TooDeep as exc:
        raise BadArguments(f"Invalid arguments for '{tool}': {exc}.") from None
    except json.JSONDecodeError as exc:
        raise BadArguments(f"Invalid arguments for '{tool}': not JSON ({exc.msg}).") from None
    if not isinstance(arguments, dict):
        raise BadArguments(f"Invalid arguments for '{tool}': pass a JSON object of parameter values.")
    return arguments
