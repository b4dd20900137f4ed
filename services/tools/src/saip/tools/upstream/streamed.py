"""What a streamed proxied call (CallServedToolStream) exchanges with its caller, whether it runs through (`relay`) or
parks at its questions (`parking`): the events it writes out (`Write`), and each answer that comes back in, as the
upstream reads it (`answer_of`: a well-formed accept or decline, anything else a cancel).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import mcp_types as types

from saip.common import jsondepth
from saip.v1 import common_pb2

Write = Callable[[common_pb2.ServedToolEvent], Awaitable[None]]
CANCEL = types.ElicitResult(action="cancel")


def answer_of(answer: common_pb2.ServedAnswer) -> types.ElicitResult:
    """The caller's answer as the upstream reads it; anything but a well-formed accept or decline is a cancel."""
    if answer.action == "decline":
        return types.ElicitResult(action="decline")
    if answer.action != "accept":
        return CANCEL
    try:
        content = jsondepth.loads(answer.content_json or "{}")
    except ValueError:  # not JSON, or nested deeper than saip reads
        return CANCEL
    if not isinstance(content, dict):
        return CANCEL
    try:
        return types.ElicitResult(action="accept", content=content)
    except ValueError:  # a value the form's types do not allow
        return CANCEL
