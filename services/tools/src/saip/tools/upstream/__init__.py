"""Upstream MCP servers beside Tool Studio: the registry (`registry`, bucket saip-servers), the shipped catalog
(`catalog`, `catalog.yaml`), one kept-alive SDK connection per server (`connections`), the risk of servers and tools
(`risk`), the fingerprint ledger of their definitions (`ledger`, bucket saip-ledger), the composition of their tools
onto saip's /mcp (`exposure`) and the proxy that serves and calls them (`proxy`); `server` is the gRPC servicer of
saip.v1.UpstreamService and the opening of all of it inside the tools service's lifespan.
"""
