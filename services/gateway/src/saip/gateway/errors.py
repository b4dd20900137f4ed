"""The gateway's exceptions; each message is a sentence the AI or the person can act on.

GatewayError
├── InvalidArguments          arguments that do not fit a tool's schema (never guessed)
│   └── LiteralSecret         a value that looks like a secret is written out (REFUSED before anything runs)
├── ServiceRefused            a service said no: the message names the rule (gRPC FAILED_PRECONDITION, ...)
│   ├── ServiceNotFound       ... because nothing has the name the call gave (gRPC NOT_FOUND)
│   └── ServiceConflict       ... because what the call would change moved since it was read, or exists (ABORTED, ...)
├── ServiceUnavailable        a service could not be reached within its deadline
│   └── ServiceNotConfigured  the gateway has no address for the service (`<service>.addr` is unset)
├── TokenManagedByConfiguration  the MCP token is set in configuration, so the API cannot change it
├── AdminTokenRequired        a REST request without the admin token (or a console session)
│   └── SignInRefused         a console sign-in with a token that is not the admin token
├── CsrfProofMissing          a console session's change without its CSRF proof
├── TooManySignIns            console sign-ins failing faster than a person types
└── ReservedName              a chosen name starts with the reserved 'saip_' prefix
"""

from __future__ import annotations

import re

from saip.common.settings import env_name
from saip.common.words import RESERVED_PREFIX, is_reserved


class GatewayError(Exception):
    """Base of every error the gateway raises on purpose."""


class InvalidArguments(GatewayError):
    def __init__(self, tool: str, details: str) -> None:
        super().__init__(f"Invalid arguments for '{tool}': {details}")
        self.tool = tool


class LiteralSecret(InvalidArguments):
    """Secrets never pass through the interface: an argument that may be a secret holds one written out. Raised while
    the arguments are bound, so the gate refuses the call (REFUSED) before anything is asked or run."""

    def __init__(self, message: str) -> None:
        GatewayError.__init__(self, message)
        self.tool = ""


class ServiceRefused(GatewayError):
    """The owning service refused; its message says which rule and what to do instead, as a sentence (a service that
    words its rules as clauses, "the query is empty; ask a question ...", gets its capital and its full stop here)."""

    def __init__(self, message: str) -> None:
        self.clause = message.strip().rstrip(".")  # the service's own words, for a sentence that quotes them
        super().__init__(sentence(message))


_WORD = re.compile(r"[a-z]+ ")


def sentence(text: str) -> str:
    """`text` starting with a capital and ending with a full stop. Only a first word of lower-case letters followed by
    a space takes the capital: one followed by ':' or '_' is a name ("wipe_disk: ..."), and stays as it is."""
    text = text.strip()
    if not text:
        return text
    if _WORD.match(text):
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else f"{text}."


class MethodRefused(GatewayError):
    """A method answered that it did not do what was asked and has nothing to show (ok false, no data: a chat turn
    without a model, an unknown conversation): over REST the error it is, a 400 with the method's own sentence."""


class ServiceNotFound(ServiceRefused):
    """The owning service has nothing by the name the call gave (REST: 404); its message says what there is."""


class ServiceConflict(ServiceRefused):
    """What the call would change moved since it was read, or exists already (REST: 409); read again and retry."""


class ServiceUnavailable(GatewayError):
    def __init__(self, service: str, reason: str) -> None:
        super().__init__(f"The {service} service is not reachable right now ({reason}); try again shortly.")
        self.service = service


class ServiceNotConfigured(ServiceUnavailable):
    """Trying again changes nothing: the person has to give the gateway the service's address."""

    def __init__(self, service: str) -> None:
        key = f"{service}.addr"
        GatewayError.__init__(
            self,
            f"The {service} service is not configured: set {key} ({env_name(key)}) and restart the gateway.",
        )
        self.service = service


class TokenManagedByConfiguration(GatewayError):
    def __init__(self) -> None:
        super().__init__(
            "The MCP token is managed by configuration; change mcp-server.auth-token in saip.yaml "
            "(or SAIP_MCP_SERVER_AUTH_TOKEN) and restart the gateway instead."
        )


class AdminTokenRequired(GatewayError):
    def __init__(self) -> None:
        super().__init__(
            "The REST API needs the admin token: send 'Authorization: Bearer <admin token>', or sign in to the "
            "console at /console."
        )


class SignInRefused(AdminTokenRequired):
    def __init__(self, message: str) -> None:
        GatewayError.__init__(self, message)


class CsrfProofMissing(GatewayError):
    def __init__(self) -> None:
        super().__init__(
            "This change came without the console's CSRF proof (the X-Saip-Csrf header of its session): reload the "
            "console and do it again."
        )


class TooManySignIns(GatewayError):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"Too many sign-ins failed in a short time; wait {seconds:.0f} s and sign in with the admin token again."
        )


class ReservedName(GatewayError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"'{name}' starts with '{RESERVED_PREFIX}', which is reserved for this app's own management tools"
        )
        self.name = name


def refuse_reserved(name: str) -> None:
    """Every place a name is chosen calls this (tool names, aliases, knowledge tool names). The prefix is refused in
    any case: `SAIP_x` would read as a management tool to a person and to a model all the same."""
    if is_reserved(name):
        raise ReservedName(name)
