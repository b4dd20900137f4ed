"""The shipyard service's exceptions; `server.py` maps them to gRPC status codes in one place.

ShipyardError
├── InvalidProposal        the proposal or a request field does not fit              -> INVALID_ARGUMENT
├── NotFound               no shipped server of that name                            -> NOT_FOUND
├── RuleRefused            a rule said no (validation, not running, unset env, ...)  -> FAILED_PRECONDITION
│   └── TargetUnusable     the target cannot run here (no Docker engine, no context)
├── Conflict               what the approval described moved on since it was read   -> ABORTED
└── StoreUnavailable       NATS, the tools or the knowledge service did not answer  -> UNAVAILABLE

Every message is a sentence the AI (or the person) can act on: it names the rule and what to do instead.
"""

from __future__ import annotations


class ShipyardError(Exception):
    """Base of every error the shipyard service raises on purpose."""


class InvalidProposal(ShipyardError):
    """A proposal or a request field does not fit; the message names each problem."""


class NotFound(ShipyardError):
    def __init__(self, name: str, known: list[str]) -> None:
        shipped = ", ".join(f"'{n}'" for n in known) if known else "none"
        super().__init__(
            f"No shipped server named '{name}' (shipped: {shipped}). Call saip_shipyard_list_servers, or ship it "
            "first with saip_shipyard_ship."
        )


class RuleRefused(ShipyardError):
    """A rule said no; the message says which and what to do instead."""


class TargetUnusable(RuleRefused):
    """The run target cannot be used on this host; the message says why and what to set."""


class Conflict(ShipyardError):
    """The server changed between the read an approval described and the write; read it again and retry."""


class StoreUnavailable(ShipyardError):
    """NATS or a source service is unreachable or did not answer; the operation can be retried."""
