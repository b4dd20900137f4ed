"""The tools service's exceptions; `server.py` maps them to gRPC status codes in one place.

ToolsError
├── InvalidSpec            the spec or the arguments are malformed         -> INVALID_ARGUMENT
├── ToolNotFound           no tool of that name                            -> NOT_FOUND
├── AlreadyPublished       publishing or drafting over a published tool    -> ALREADY_EXISTS
├── RuleRefused            any other rule (read-only, draft exposure, ...) -> FAILED_PRECONDITION
│   ├── LiteralSecret      a static variable, header or env value that looks like a secret is a literal
│   └── OwnMcp             an upstream that is saip's own /mcp (by URL or by its handshake)
├── ServerNotFound         no upstream server of that id                    -> NOT_FOUND
├── ServerExists           an upstream server of that id is registered      -> ALREADY_EXISTS
├── UnreadableRecord       a stored record no longer parses                -> FAILED_PRECONDITION
├── Conflict               the record moved on since it was read           -> ABORTED
└── StoreUnavailable       NATS did not answer in time                     -> UNAVAILABLE
SandboxError               (saip.sandbox, re-exported here)
└── SandboxUnavailable     the sandbox's workers could not take the run    -> UNAVAILABLE

Every message is a sentence the AI (or the person) can act on: it names the rule and what to do instead.
"""

from __future__ import annotations

# Re-exported: the RPC edge maps them with the service's own.
from saip.sandbox.errors import SandboxError as SandboxError
from saip.sandbox.errors import SandboxUnavailable as SandboxUnavailable


class ToolsError(Exception):
    """Base of every error the tools service raises on purpose."""


class InvalidSpec(ToolsError):
    """A spec, an argument set or a request field does not fit; the message names each problem."""


class ToolNotFound(ToolsError):
    def __init__(self, name: str) -> None:
        super().__init__(f"No tool named '{name}'. Call saip_tools_list for the tools there are.")
        self.name = name


class AlreadyPublished(ToolsError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"'{name}' is published, and a published tool is not changed by a new draft of the same name. "
            "Save the new version as a draft under another name, publish it, then delete the old tool."
        )
        self.name = name


class RuleRefused(ToolsError):
    """A lifecycle or ownership rule said no; the message says which and what to do instead."""


class LiteralSecret(RuleRefused):
    """A value that looks like a secret is written out instead of being a ${NAME} reference (the sentence is
    `saip.common.literals`', the one every place that refuses a literal secret says)."""


class OwnMcp(RuleRefused):
    def __init__(self, server_id: str) -> None:
        super().__init__(
            f"Server '{server_id}' is saip's own /mcp, which cannot be its own upstream; register the upstream "
            "server's URL instead."
        )


class ServerNotFound(ToolsError):
    def __init__(self, server_id: str) -> None:
        super().__init__(
            f"No upstream server with the id '{server_id}'. Call saip_mcp_list_servers for the registered servers."
        )
        self.server_id = server_id


class ServerExists(ToolsError):
    def __init__(self, server_id: str) -> None:
        super().__init__(
            f"An upstream server with the id '{server_id}' is registered already. Choose another id, or remove it "
            "with saip_mcp_remove_server first."
        )
        self.server_id = server_id


class UnreadableRecord(ToolsError):
    """A record in the bucket is not a ToolRecord with a valid spec (written by another build, or by hand)."""


class Conflict(ToolsError):
    """Someone else changed the record between our read and our write; read it again and retry."""


class StoreUnavailable(ToolsError):
    """NATS is unreachable or did not answer; the operation can be retried."""
