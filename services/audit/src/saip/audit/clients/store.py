"""What the audit service's NATS clients share: the deadline of every JetStream request, the failures a retry can
outlast reported as StoreUnavailable (naming the action), a delivery's stream sequence, and the SAIP_AUDIT stream."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from saip.audit.errors import StoreUnavailable
from saip.common import jetstream, names
from saip.common.settings import SaipSettings

REQUEST_TIMEOUT = 2.0  # every JetStream API call and publish
STREAM_NOT_FOUND = 10059
# A delivery's reply subject: $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>, or
# (v2) with a domain and an account hash after ACK and a random token at the end; the positions are nats-py's.
_V1_ACK_TOKENS, _V1_STREAM_SEQ, _V2_ACK_TOKENS = 9, 5, 11

_TRANSIENT: tuple[type[BaseException], ...] = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    TimeoutError,
    OSError,
)


@contextlib.contextmanager
def store(action: str) -> Iterator[None]:
    """Report what a retry can outlast as StoreUnavailable, naming the action that failed."""
    try:
        yield
    except nats.js.errors.NotFoundError as exc:
        # Right after a restart JetStream may answer before it has loaded the stream.
        if exc.err_code == STREAM_NOT_FOUND:
            raise StoreUnavailable(f"{action}: stream {names.AUDIT_STREAM} not found") from exc
        raise
    except _TRANSIENT as exc:
        raise StoreUnavailable(f"{action}: {type(exc).__name__} {exc}".strip()) from exc


def stream_sequence(msg: Msg) -> int:
    """The stream sequence of a message a JetStream consumer delivered, read from its reply subject alone: nats-py's
    `msg.metadata` also makes a datetime and three frozen dataclasses, several times the cost of this split, and the
    audit service reads it twice a record (the collector's delivery, the views' follower)."""
    tokens = (msg.reply or "").split(".")
    if tokens[:2] == [Msg.Ack.Prefix0, Msg.Ack.Prefix1]:
        if len(tokens) == _V1_ACK_TOKENS:
            return int(tokens[_V1_STREAM_SEQ])
        if len(tokens) >= _V2_ACK_TOKENS:
            return int(tokens[Msg.Ack.StreamSeq])
    return int(msg.metadata.sequence.stream)  # not a JetStream delivery: nats-py says so (NotJSMessageError)


async def ensure_audit_stream(js: JetStreamContext, settings: SaipSettings) -> None:
    """Create SAIP_AUDIT, or bring it to the configured limits."""
    with store("create the audit stream"):
        await jetstream.ensure_stream(js, jetstream.audit_stream_config(settings))
