"""The gateway's exceptions; each message is a sentence the AI or the person can act on.

GatewayError
├── InvalidArguments          arguments that do not fit a tool's schema (never guessed)
├── ServiceRefused            a service said no: the message names the rule (gRPC FAILED_PRECONDITION, ...)
├── ServiceUnavailable        a service could not be reached within its deadline
├── TokenManagedByConfiguration  the MCP token is set in configuration, so the API cannot change it
└── ReservedName              a chosen name starts with the reserved 'saip_' prefix
"""

from __future__ import annotations

RESERVED_PREFIX = "saip_"


class GatewayError(Exception):
    """Base of every error the gateway raises on purpose."""


class InvalidArguments(GatewayError):
    def __init__(self, tool: str, details: str) -> None:
        super().__init__(f"Invalid arguments for '{tool}': {details}")
        self.tool = tool


class ServiceRefused(GatewayError):
    """The owning service refused; its message says which rule and what to do instead."""


class ServiceUnavailable(GatewayError):
    def __init__(self, service: str, reason: str) -> None:
        super().__init__(f"The {service} service is not reachable right now ({reason}); try again shortly.")
        self.service = service


class TokenManagedByConfiguration(GatewayError):
    def __init__(self) -> None:
        super().__init__(
            "The MCP token is managed by configuration; change mcp-server.auth-token in saip.yaml "
            "(or SAIP_MCP_SERVER_AUTH_TOKEN) and restart the gateway instead."
        )


class ReservedName(GatewayError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"'{name}' starts with '{RESERVED_PREFIX}', which is reserved for this app's own management tools"
        )
        self.name = name


def refuse_reserved(name: str) -> None:
    """Every place a name is chosen calls this (tool names, aliases, knowledge tool names)."""
    if name.startswith(RESERVED_PREFIX):
        raise ReservedName(name)
