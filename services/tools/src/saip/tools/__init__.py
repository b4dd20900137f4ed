"""saip tools: Tool Studio, the JavaScript sandbox and what /mcp serves of them."""
