"""The MCP surface: what /mcp serves and how each call passes.

`management` (the vocabulary: levels, outcomes, the result envelope, tools, resources, prompts), `declare` (how an
area declares them), `registry` (what is served, by source), `registrar` (which management tools are offered),
`gate` (the approval gate), `approval` (what asking the person is made of), `asking` (asking, in both protocol eras
and out of band), `pending` (the questions every replica shares), `questions` (the unanswered ones' sweeper and the
person's inbox), `audited` (the audited-call core both gates share), `published` (the tools other services publish)
and `mcp_server` (the SDK's low-level server reading the registry).
"""
