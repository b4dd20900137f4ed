"""A NATS call's failures as the calling service's own error: one rule for every service's adapters.

What a retry may outlast (the client's errors, a request's timeout, a broken socket, the call's own deadline) leaves
as the service's error made from the sentence `unanswered` says, which its RPC edge answers as UNAVAILABLE. What
JetStream answers that a caller acts on instead (a key, object, bucket or stream not found; a write whose revision
moved on) passes through as nats-py raised it, so the caller can say "missing" or "changed since it was read", and so
does a name nats-py refuses before it sends anything (a key, bucket or object name with characters NATS does not
take), which is the caller's input, never NATS away; a
compare-and-set delete whose revision moved on, which nats-py raises as the stream's own BadRequestError, passes as the
KeyWrongLastSequenceError every other compare-and-set raises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from nats.errors import Error as NatsError
from nats.js.errors import (
    BadRequestError,
    InvalidBucketNameError,
    InvalidKeyError,
    InvalidObjectNameError,
    KeyWrongLastSequenceError,
    NotFoundError,
)

# JetStream's error codes of a write whose expected last sequence moved on (what nats-py's update maps itself).
WRONG_LAST_SEQUENCE = (10071, 10164)
# What a caller acts on rather than retries: JetStream's answers, and a name the client refuses before sending.
ANSWERS = (NotFoundError, KeyWrongLastSequenceError, InvalidKeyError, InvalidBucketNameError, InvalidObjectNameError)
# What a retry may outlast.
FAILURES = (NatsError, TimeoutError, OSError)

_T = TypeVar("_T")


def unanswered(exc: BaseException) -> str:
    """The sentence of a failure a retry may outlast: what failed, and that trying again is the remedy."""
    return f"NATS did not answer ({type(exc).__name__}); try again shortly"


async def answered(operation: Awaitable[_T], away: Callable[[str], Exception], *, within: float | None = None) -> _T:
    """The operation's result, within `within` seconds when given; a failure a retry may outlast raises
    `away(unanswered(failure))`, JetStream's answers pass through (the module's rule)."""
    try:
        with anyio.fail_after(within):
            return await operation
    except ANSWERS:
        raise
    except BadRequestError as exc:
        if exc.err_code in WRONG_LAST_SEQUENCE:
            raise KeyWrongLastSequenceError(description=exc.description) from None
        raise away(unanswered(exc)) from None
    except FAILURES as exc:
        raise away(unanswered(exc)) from None
