"""How each AI client connects to /mcp, in one place: the REST API serves it with the real URL
(GET /api/v1/clients/snippets, which the console's overview shows), and docs/clients.md shows the same text for
http://127.0.0.1:8282/mcp (a contract test holds the two together).

A client that takes a header gets a named token (`saip clients add NAME`) through an environment variable it reads;
a client that signs in (ChatGPT, Claude.ai and Claude Desktop) needs oauth.enabled and a URL it can reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TOKEN_VARIABLE = "SAIP_MCP_TOKEN"


@dataclass(frozen=True)
class Snippet:
    client: str
    auth: str  # "oauth": the client signs in and the person consents; "token": a named token in a header
    steps: tuple[str, ...]
    config: str = ""  # the command or file to paste, `{url}` and `{variable}` filled in
    language: str = ""  # how the config reads: shell, json, toml

    def rendered(self, url: str) -> dict[str, Any]:
        def fill(text: str) -> str:
            return text.replace("{url}", url).replace("{variable}", TOKEN_VARIABLE)

        return {
            "client": self.client,
            "auth": self.auth,
            "steps": [fill(step) for step in self.steps],
            "config": fill(self.config),
            "language": self.language,
        }


NAMED_TOKEN = (
    "Make it a named token: saip clients add NAME --scope manage (or --scope tools for the published tools only)."
)
EXPORT = "Export it where the client starts: export {variable}=<the token>."

SNIPPETS: tuple[Snippet, ...] = (
    Snippet(
        "ChatGPT (developer mode)",
        "oauth",
        (
            "Turn OAuth on (oauth.enabled: true) and give the gateway a public https URL ChatGPT can reach "
            "(gateway.public-url, and its host in gateway.allowed-hosts).",
            "In ChatGPT: Settings, Apps & Connectors, Advanced settings: turn Developer mode on.",
            "Create a connector: name saip, MCP server URL {url}, authentication OAuth.",
            "ChatGPT registers itself and opens saip's consent page: sign in to the console and approve it with the "
            "grant it needs.",
        ),
    ),
    Snippet(
        "Claude.ai and Claude Desktop",
        "oauth",
        (
            "Turn OAuth on (oauth.enabled: true) and give the gateway a public https URL Anthropic can reach "
            "(gateway.public-url, and its host in gateway.allowed-hosts).",
            "In Claude: Settings, Connectors, Add custom connector: name saip, remote MCP server URL {url}.",
            "Connect: Claude opens saip's consent page; sign in to the console and approve it.",
        ),
    ),
    Snippet(
        "Claude Code",
        "token",
        (NAMED_TOKEN, EXPORT, "Add the server:"),
        'claude mcp add --transport http saip {url} --header "Authorization: Bearer ${variable}"',
        "shell",
    ),
    Snippet(
        "Cursor",
        "token",
        (
            NAMED_TOKEN,
            EXPORT,
            "Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project); with OAuth on, Cursor signs in instead of "
            "sending the header.",
        ),
        '{\n  "mcpServers": {\n    "saip": {\n      "url": "{url}",\n'
        '      "headers": { "Authorization": "Bearer ${env:{variable}}" }\n    }\n  }\n}',
        "json",
    ),
    Snippet(
        "VS Code",
        "token",
        (NAMED_TOKEN, "Add to .vscode/mcp.json; VS Code asks for the token once and keeps it."),
        '{\n  "inputs": [\n    { "type": "promptString", "id": "saip-token", "description": "saip MCP token", '
        '"password": true }\n  ],\n  "servers": {\n    "saip": {\n      "type": "http",\n      "url": "{url}",\n'
        '      "headers": { "Authorization": "Bearer ${input:saip-token}" }\n    }\n  }\n}',
        "json",
    ),
    Snippet(
        "Codex CLI",
        "token",
        (NAMED_TOKEN, EXPORT, "Add the server (it lands in ~/.codex/config.toml):"),
        "codex mcp add saip --url {url} --bearer-token-env-var {variable}",
        "shell",
    ),
    Snippet(
        "MCP Inspector",
        "token",
        (
            NAMED_TOKEN,
            EXPORT,
            "Connect with its command line, mcpdo (--era legacy for 2025-11-25, modern for 2026-07-28):",
        ),
        'mcpdo connect {url} --transport http --header "Authorization: Bearer ${variable}" --era modern',
        "shell",
    ),
)


def snippets(url: str) -> list[dict[str, Any]]:
    """Every client's steps and config, for `url` (the MCP endpoint the person's clients reach)."""
    return [snippet.rendered(url) for snippet in SNIPPETS]
