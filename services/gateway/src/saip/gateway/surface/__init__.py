"""The MCP surface: what /mcp serves and how each call passes.

`management` (the vocabulary: levels, outcomes, the result envelope, tools, resources, prompts), `declare` (how an
area declares them), `registry` (what is served, by source), `registrar` (which management tools are offered),
`gate` (the approval gate and asking the person), `approval` (the question in both protocol eras), `audited` (the
audited-call core both gates share), `published` (the tools other services publish) and `mcp_server` (the SDK's
low-level server reading the registry).
"""
