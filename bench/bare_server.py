"""The baseline: a bare MCP SDK server with one native Python tool, over the same streamable HTTP transport."""

from __future__ import annotations

import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("bare", version="1.0", log_level="WARNING")


@server.tool(description="Return a small status document, like a monitor tool does.")
def status() -> dict[str, object]:
    return {"ok": True, "message": "bare", "data": {"tools": 4, "surface": True}}


@server.tool(description="Count the words of a text.")
def word_count(text: str) -> dict[str, object]:
    return {"words": len(text.split())}


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
