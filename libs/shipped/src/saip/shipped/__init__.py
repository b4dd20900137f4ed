"""saip shipped servers: the bundle format (`bundle`) and the standalone MCP server that serves one bundle's tools
(`python -m saip.shipped --bundle <file>`): authored tools in the sandbox (`authored`), knowledge tools on their
snapshot in-process (`knowledge`), exposed upstream members called on their upstream and withheld when its definition
moved (`upstream`), the approval gate of HITL tools (`approval`), over stdio or streamable HTTP with its own bearer
token (`server`)."""
