"""Real upstream MCP servers the tests start (streamable HTTP, SSE, stdio) and the helpers that start them."""
