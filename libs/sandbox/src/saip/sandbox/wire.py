"""Messages between the pool and a worker: JSON objects on a Unix socket, each framed by its length."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

HEADER = struct.Struct(">I")
# A job or an outcome is at most a few MiB (the result and the console are capped); anything larger is a fault.
MAX_MESSAGE = 64 * 1024 * 1024


class WireError(Exception):
    """The other side sent something that is not a message of this protocol."""


async def send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("ascii")
    writer.write(HEADER.pack(len(data)) + data)
    await writer.drain()


async def receive(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None when the other side closed the socket (or its process ended)."""
    try:
        (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
        if size > MAX_MESSAGE:
            raise WireError(f"a message of {size} bytes is larger than the {MAX_MESSAGE} the protocol allows")
        data = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    try:
        message = json.loads(data)
    except ValueError as exc:
        raise WireError(f"a message is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise WireError("a message is not a JSON object")
    return message
