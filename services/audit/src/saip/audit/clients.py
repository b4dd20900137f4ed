"""The NATS side of the audit service: the collector's durable consumer on the record subjects, and the
ledger subject (its head, optimistic appends, bounded reads and a follower), all with deadlines.

NATS failures that a retry can outlast (timeouts, reconnects, JetStream not ready after a restart) become
StoreUnavailable; anything else is a bug or a misconfiguration and propagates as it is.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header

from saip.audit.chain import GENESIS, ChainHead, LedgerMessage, decode_entry, head_of
from saip.audit.collector import Appended
from saip.audit.errors import ChainMoved, StoreUnavailable
from saip.audit.views import Window
from saip.common import bus, names
from saip.common.settings import SaipSettings
from saip.v1 import events_pb2

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT = 2.0  # every JetStream API call and publish
FETCH_WAIT = 5.0  # how long one pull waits for a record before the collector asks again
# How long a delivered record may stay unacknowledged before JetStream gives it to a collector again. The
# consumer lets one record out at a time (max_ack_pending=1), which keeps the chain in stream order even with
# two collectors, so this is also how long a crashed collector's record holds the line.
ACK_WAIT = 5.0
READ_STALL = 5.0  # a bounded read that receives nothing for this long is reported as unavailable
FOLLOW_HEARTBEAT = 1.0  # the follower notices a restarted server within two heartbeats and resumes
FIRST_WINDOW = 128
MAX_WINDOW = 8192
LEDGER_ID_PREFIX = "ledger:"
WRONG_LAST_SEQUENCE = 10071
STREAM_NOT_FOUND = 10059

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
def _store(action: str) -> Iterator[None]:
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


@dataclass(frozen=True, slots=True)
class NatsDelivery:
    """A record delivered by the collector consumer."""

    msg: Msg

    @property
    def data(self) -> bytes:
        return bytes(self.msg.data)

    @property
    def subject(self) -> str:
        return str(self.msg.subject)

    @property
    def seq(self) -> int:
        return int(self.msg.metadata.sequence.stream)

    async def ack(self) -> None:
        # Not confirmed: the server reads it before the collector's next pull on this connection, and one that
        # is lost only means a redelivery after ACK_WAIT, which is recognised and not chained again.
        with _store("acknowledge a record"):
            await self.msg.ack()

    async def reject(self) -> None:
        with _store("terminate a record"):
            await self.msg.term()


def collector_consumer(ack_wait: float = ACK_WAIT) -> ConsumerConfig:
    """`audit-collector`: durable, pull, explicit ack, every record subject from the stream's start."""
    return ConsumerConfig(
        name=names.AUDIT_COLLECTOR,
        durable_name=names.AUDIT_COLLECTOR,
        description="saip audit collector: chains every audit record",
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_ack_pending=1,
        filter_subjects=list(names.AUDIT_RECORD_SUBJECTS),
    )


class JetStreamRecords:
    """The published records through the `audit-collector` consumer (a RecordSource)."""

    def __init__(self, js: JetStreamContext, *, ack_wait: float = ACK_WAIT, fetch_wait: float = FETCH_WAIT) -> None:
        self._js = js
        self._config = collector_consumer(ack_wait)
        self._fetch_wait = fetch_wait
        self._sub: JetStreamContext.PullSubscription | None = None

    async def open(self) -> None:
        """Create the consumer, or bring an existing one to this configuration, and bind to it."""
        with _store("create the collector consumer"):
            await self._js.add_consumer(names.AUDIT_STREAM, self._config, timeout=REQUEST_TIMEOUT)
            self._sub = await self._js.pull_subscribe_bind(names.AUDIT_COLLECTOR, stream=names.AUDIT_STREAM)

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._sub.unsubscribe()
            self._sub = None

    def _bound(self) -> JetStreamContext.PullSubscription:
        if self._sub is None:
            raise RuntimeError("JetStreamRecords.open() was not called")
        return self._sub

    async def next(self) -> NatsDelivery | None:
        sub = self._bound()
        with _store("fetch a record"):
            try:
                msgs = await sub.fetch(1, timeout=self._fetch_wait)
            except TimeoutError:
                return None  # nothing was published meanwhile
        return NatsDelivery(msgs[0])

    async def pending(self) -> int:
        """Records published and not chained yet: waiting for delivery plus delivered and unacknowledged."""
        with _store("read the collector consumer"):
            info = await self._js.consumer_info(names.AUDIT_STREAM, names.AUDIT_COLLECTOR, timeout=REQUEST_TIMEOUT)
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)


class JetStreamLedger:
    """The chain on subject `saip.audit.ledger` of the SAIP_AUDIT stream."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def last_message(self) -> LedgerMessage | None:
        try:
            with _store("read the last ledger message"):
                raw = await self._js.get_last_msg(names.AUDIT_STREAM, names.AUDIT_LEDGER)
        except nats.js.errors.NotFoundError:
            return None
        return LedgerMessage(seq=int(raw.seq or 0), data=bytes(raw.data or b""))

    async def head(self) -> ChainHead:
        """The chain's head: its last entry.

        A last message that is not an entry (written by something other than a collector) cannot be linked
        to, so the chain continues from the newest readable entry before it while still expecting the damaged
        message's sequence; VerifyChain reports the damage.
        """
        last = await self.last_message()
        if last is None:
            return GENESIS
        entry = decode_entry(last.data)
        if entry is not None:
            return head_of(entry, last.seq)
        logger.error("the last ledger message is not a chain entry", extra={"seq": last.seq})
        async with contextlib.aclosing(self.windows_back(last.seq, budget=MAX_WINDOW * 4)) as windows:
            async for window in windows:
                for message in reversed(window.messages):
                    if (earlier := decode_entry(message.data)) is not None:
                        return ChainHead(earlier.index, earlier.hash, last.seq, earlier.source_id)
        return ChainHead(GENESIS.index, GENESIS.hash, last.seq, "")

    async def append(self, entry: events_pb2.LedgerEntry, expected_seq: int) -> Appended:
        headers: dict[str, str] = {
            Header.MSG_ID: LEDGER_ID_PREFIX + entry.source_id,
            Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(expected_seq),
        }
        try:
            with _store("append to the ledger"):
                ack = await self._js.publish(
                    names.AUDIT_LEDGER,
                    entry.SerializeToString(deterministic=True),
                    timeout=REQUEST_TIMEOUT,
                    stream=names.AUDIT_STREAM,
                    headers=headers,
                )
        except nats.js.errors.BadRequestError as exc:
            if exc.err_code == WRONG_LAST_SEQUENCE:
                raise ChainMoved(str(exc.description)) from None
            raise
        return Appended(seq=int(ack.seq), duplicate=bool(ack.duplicate))

    async def bounds(self) -> tuple[int, int]:
        """(first stream sequence, last ledger sequence); (0, 0) when the stream holds no ledger message."""
        last = await self.last_message()
        if last is None:
            return 0, 0
        with _store("read the stream state"):
            info = await self._js.stream_info(names.AUDIT_STREAM)
        return int(info.state.first_seq), last.seq

    async def _ledger_from(self, start_seq: int, **options: Any) -> JetStreamContext.PushSubscription:
        """An ordered consumer of the ledger subject starting at `start_seq`."""
        with _store("open a ledger reader"):
            return await self._js.subscribe(
                names.AUDIT_LEDGER,
                stream=names.AUDIT_STREAM,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                config=ConsumerConfig(opt_start_seq=max(start_seq, 1)),
                **options,
            )

    async def read(self, start_seq: int, end_seq: int) -> AsyncGenerator[LedgerMessage, None]:
        """The ledger messages with stream sequence in [start_seq, end_seq], oldest first."""
        if end_seq < start_seq:
            return
        sub = await self._ledger_from(start_seq)
        try:
            with _store("open a ledger reader"):
                info = await sub.consumer_info()
            # The consumer pushes at once, so what matched from start_seq is what it delivered plus what waits.
            if not (info.num_pending or 0) + (info.delivered.consumer_seq if info.delivered else 0):
                return
            while True:
                with _store("read the ledger"):
                    msg = await sub.next_msg(timeout=READ_STALL)
                seq = int(msg.metadata.sequence.stream)
                if seq > end_seq:
                    return
                yield LedgerMessage(seq=seq, data=bytes(msg.data))
                if seq >= end_seq or not msg.metadata.num_pending:
                    return
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def windows_back(self, before_seq: int, budget: int) -> AsyncGenerator[Window, None]:
        """Stretches of the stream below `before_seq`, newest first, doubling in size, until the stream's
        first message or `budget` sequences have been covered.
        """
        with _store("read the stream state"):
            info = await self._js.stream_info(names.AUDIT_STREAM)
        if not info.state.messages:
            return
        first = int(info.state.first_seq)
        end = before_seq - 1
        size, covered = FIRST_WINDOW, 0
        while end >= first and covered < budget:
            start = max(first, end - size + 1, end - (budget - covered) + 1)
            messages = [message async for message in self.read(start, end)]
            covered += end - start + 1
            yield Window(start_seq=start, messages=messages, at_start=start <= first)
            end = start - 1
            size = min(size * 2, MAX_WINDOW)

    async def follow(self, from_seq: int) -> AsyncGenerator[LedgerMessage, None]:
        """Every ledger message from `from_seq` on, as it is appended; the ordered consumer recreates itself
        after a server restart and resumes after the last message it delivered.
        """
        sub = await self._ledger_from(from_seq, idle_heartbeat=FOLLOW_HEARTBEAT)
        try:
            while True:
                with _store("follow the ledger"):
                    msg = await sub.next_msg(timeout=None)
                yield LedgerMessage(seq=int(msg.metadata.sequence.stream), data=bytes(msg.data))
        finally:
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()


async def ensure_audit_stream(js: JetStreamContext, settings: SaipSettings) -> None:
    """Create SAIP_AUDIT, or bring it to the configured limits."""
    with _store("create the audit stream"):
        await bus.ensure_stream(js, bus.audit_stream_config(settings))
