"""The NATS side of the audit service: the collector's durable consumer on the record subjects (batches of
records in stream order), the ledger subject (its head, optimistic appends one at a time or as atomic batches,
bounded reads and a follower), all with deadlines; and the subscription to the services' spans, which fills the
trace store.

NATS failures that a retry can outlast (timeouts, reconnects, JetStream not ready after a restart) become
StoreUnavailable; anything else is a bug or a misconfiguration and propagates as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DEFAULT_PREFIX, AckPolicy, ConsumerConfig, DeliverPolicy, Header, StatusCode

from saip.audit.chain import GENESIS, ChainHead, LedgerMessage, decode_entry, head_of
from saip.audit.collector import BATCH, Appended
from saip.audit.errors import BatchRefused, ChainMoved, StoreUnavailable
from saip.audit.traces import TraceStore, decode
from saip.audit.views import Window
from saip.common import jetstream, names
from saip.common.settings import SaipSettings
from saip.v1 import events_pb2

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT = 2.0  # every JetStream API call and publish
FETCH_WAIT = 5.0  # how long one pull request stands on the consumer before the collector sends another
# How often a batch waiting for records checks that its pull request still stands (a reconnect drops it).
PULL_CHECK = 0.25
# How long a delivered record may stay unacknowledged before JetStream gives it to a collector again. The consumer
# lets one batch out at a time (max_ack_pending = the batch), so a crashed collector's batch is redelivered after
# this long, and nothing newer can be delivered until the batch's records are acknowledged, or redelivered.
ACK_WAIT = 5.0
# On a moved head, the ledger is read back at most this many stream sequences to learn what was chained meanwhile;
# a record chained before that is recognised by its message id instead.
CATCH_UP_SPAN = 4 * BATCH * 8
READ_STALL = 5.0  # a bounded read that receives nothing for this long is reported as unavailable
FOLLOW_HEARTBEAT = 1.0  # the follower notices a restarted server within two heartbeats and resumes
FIRST_WINDOW = 128
MAX_WINDOW = 8192
# Where the collector consumer's pull requests go (saip's connections use JetStream's default API prefix).
PULL_SUBJECT = f"{DEFAULT_PREFIX}.CONSUMER.MSG.NEXT.{names.AUDIT_STREAM}.{names.AUDIT_COLLECTOR}"
LEDGER_ID_PREFIX = "ledger:"
WRONG_LAST_SEQUENCE = 10071
STREAM_NOT_FOUND = 10059
ATOMIC_DISABLED = 10174
BATCH_HOLDS_DUPLICATE = 10201
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
# A delivery's reply subject: $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>, or
# (v2) with a domain and an account hash after ACK and a random token at the end; the positions are nats-py's.
_V1_ACK_TOKENS, _V1_STREAM_SEQ, _V2_ACK_TOKENS = 9, 5, 11
# Span batches a slow store may leave waiting before NATS drops the newest (traces are recent, never a record).
TRACE_BACKLOG = 1024

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
        return stream_sequence(self.msg)

    @property
    def headers(self) -> Mapping[str, str] | None:
        return self.msg.headers

    async def ack(self) -> None:
        # Not confirmed: the server reads it before the collector's next pull on this connection, and one that
        # is lost only means a redelivery after ACK_WAIT, which is recognised and not chained again.
        with _store("acknowledge a record"):
            await self.msg.ack()

    async def reject(self) -> None:
        with _store("terminate a record"):
            await self.msg.term()


def collector_consumer(ack_wait: float = ACK_WAIT) -> ConsumerConfig:
    """`audit-collector`: durable, pull, explicit ack, every record subject from the stream's start, one batch of
    records out at a time."""
    return ConsumerConfig(
        name=names.AUDIT_COLLECTOR,
        durable_name=names.AUDIT_COLLECTOR,
        description="saip audit collector: chains every audit record",
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_ack_pending=BATCH,
        filter_subjects=list(names.AUDIT_RECORD_SUBJECTS),
    )


@dataclass(frozen=True, slots=True)
class _Leftovers:
    """The records a stopped collector left unacknowledged, as the consumer counted them when this one opened."""

    count: int  # delivered and not acknowledged
    up_to: int  # the last stream sequence the consumer had delivered: every one of them is at or below it
    until: float  # the loop time after which the batch in hand goes without the ones still missing


@dataclass(slots=True)
class _Pull:
    """The pull request standing on the consumer: its reply subject (its status messages come back on it), how many
    more records it may bring, and when it lapses (the loop time of its `expires`, or a reconnect, whichever first)."""

    reply: str = ""
    left: int = 0
    until: float = 0.0
    reconnects: int = -1

    def standing(self, now: float, reconnects: int) -> bool:
        # A reconnect loses it: the server drops a pull request whose reply subject lost its interest.
        return self.left > 0 and now < self.until and reconnects == self.reconnects


def _stream_seq(delivery: NatsDelivery) -> int:
    return delivery.seq


def stream_sequence(msg: Msg) -> int:
    """The stream sequence of a message a JetStream consumer delivered, read from its reply subject alone: nats-py's
    `msg.metadata` also makes a datetime and three frozen dataclasses (3.9 µs a message, against 0.4), and the
    audit service reads it twice a record (the collector's delivery, the views' follower)."""
    tokens = (msg.reply or "").split(".")
    if tokens[:2] == [Msg.Ack.Prefix0, Msg.Ack.Prefix1]:
        if len(tokens) == _V1_ACK_TOKENS:
            return int(tokens[_V1_STREAM_SEQ])
        if len(tokens) >= _V2_ACK_TOKENS:
            return int(tokens[Msg.Ack.StreamSeq])
    return int(msg.metadata.sequence.stream)  # not a JetStream delivery: nats-py says so (NotJSMessageError)


class JetStreamRecords:
    """The published records through the `audit-collector` consumer (a RecordSource).

    One pull request stands on the consumer at a time, for up to a batch of records and `fetch_wait` seconds, and is
    renewed once it is spent or lapses: the records it brings wait in a buffer, so a record arriving alone costs no
    pull request of its own (nats-py's `fetch` sent two or three per batch, and waited `MORE_WAIT` for company).

    JetStream delivers new records in stream order, but not always its redeliveries: a record negatively acknowledged,
    or whose redelivery did not go through, is queued again behind the others, and one can even come back after
    newer records were delivered. So each batch is sorted by stream sequence, and the first batch after a collector
    stopped with records in hand waits until it holds every one of them.
    """

    def __init__(self, nc: NatsClient, *, ack_wait: float = ACK_WAIT, fetch_wait: float = FETCH_WAIT) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=REQUEST_TIMEOUT)
        self._config = collector_consumer(ack_wait)
        self._ack_wait = ack_wait
        self._fetch_wait = fetch_wait
        self._sub: Subscription | None = None
        self._inbox = ""
        self._pull = _Pull()
        self._pulls = 0
        self._arrived: deque[Msg] = deque()
        self._wake: asyncio.Future[None] | None = None
        self._failure: Msg | None = None
        self._not_before = 0.0
        self._leftovers: _Leftovers | None = None

    async def open(self) -> None:
        """Create the consumer, or bring an existing one to this configuration, and subscribe to the replies of its
        pull requests.

        Records still out with a collector that stopped without acknowledging them come back once the ack wait has
        passed. The first pull waits for that, and the first batch waits (one more ack wait at most) until it holds
        every one of them, so they are chained in their place in the stream rather than after what was published
        since, whatever order JetStream redelivers them in.
        """
        with _store("create the collector consumer"):
            info = await self._js.add_consumer(names.AUDIT_STREAM, self._config, timeout=REQUEST_TIMEOUT)
            self._inbox = self._nc.new_inbox()
            self._sub = await self._nc.subscribe(f"{self._inbox}.*", cb=self._received)
        if info.num_ack_pending:
            self._not_before = asyncio.get_running_loop().time() + self._ack_wait
            delivered = int(info.delivered.stream_seq or 0) if info.delivered else 0
            self._leftovers = _Leftovers(int(info.num_ack_pending), delivered, self._not_before + self._ack_wait)

    async def close(self) -> None:
        """Unsubscribe. Records the standing pull brought and no batch took are left unacknowledged: JetStream gives
        them to the next collector after the ack wait, which waits for them before anything newer."""
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._sub.unsubscribe()
            self._sub = None

    async def _received(self, msg: Msg) -> None:
        """The subscription's callback: a record (on its own subject), or a status of one of the pull requests (on
        the request's reply subject)."""
        if msg.subject.startswith(self._inbox):
            headers = msg.headers or {}
            status = headers.get(Header.STATUS)
            if status == StatusCode.CONTROL_MESSAGE or msg.subject != self._pull.reply:
                return  # a heartbeat, or the end of a request already renewed
            self._pull.left = 0  # spent, lapsed or refused: the next batch sends another
            if status == StatusCode.CONFLICT:
                logger.info("pull request ended by the server", extra={"reason": headers.get(Header.DESCRIPTION)})
            elif status not in (StatusCode.NO_MESSAGES, StatusCode.REQUEST_TIMEOUT):
                self._failure = msg
        else:
            self._arrived.append(msg)
            self._pull.left -= 1
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def _keep_pulling(self) -> None:
        """Send a pull request unless one stands."""
        now, reconnects = asyncio.get_running_loop().time(), self._nc.stats["reconnects"]
        if self._pull.standing(now, reconnects):
            return
        if self._sub is None:
            raise RuntimeError("JetStreamRecords.open() was not called")
        self._pulls += 1
        reply = f"{self._inbox}.{self._pulls}"
        request = {"batch": self._config.max_ack_pending, "expires": int(self._fetch_wait * 1e9)}
        with _store("request records"):
            await self._nc.publish(PULL_SUBJECT, json.dumps(request).encode(), reply=reply)
        self._pull = _Pull(reply, int(self._config.max_ack_pending or BATCH), now + self._fetch_wait, reconnects)

    async def _take(self, limit: int, until: float) -> list[NatsDelivery]:
        """The records in the buffer, up to `limit`, once there is one; [] when none came before loop time `until`."""
        loop = asyncio.get_running_loop()
        while not self._arrived:
            if (failure := self._failure) is not None:
                self._failure = None
                with _store("fetch records"):
                    raise nats.js.errors.APIError.from_msg(failure)
            await self._keep_pulling()
            if (left := min(until, self._pull.until) - loop.time()) <= 0:
                return []
            self._wake = loop.create_future()
            try:
                async with asyncio.timeout(min(left, PULL_CHECK)):
                    await self._wake
            except TimeoutError:
                if loop.time() >= until:
                    return []
            finally:
                self._wake = None
        taken = [NatsDelivery(self._arrived.popleft()) for _ in range(min(limit, len(self._arrived)))]
        await self._keep_pulling()  # the next records come while these are chained
        return taken

    async def batch(self, limit: int) -> list[NatsDelivery]:
        """The records that have arrived, up to `limit`, in stream order; [] when none came within the fetch wait.
        The first batch after a stopped collector's records came back holds all of them (and what came with them:
        the consumer lets no more than a batch out unacknowledged)."""
        loop = asyncio.get_running_loop()
        if (wait := self._not_before - loop.time()) > 0:
            await asyncio.sleep(wait)
        deliveries = await self._take(limit, loop.time() + self._fetch_wait)
        if (leftovers := self._leftovers) is not None:
            self._leftovers = None
            deliveries = await self._gather(leftovers, deliveries, limit)
        deliveries.sort(key=_stream_seq)
        return deliveries

    async def _gather(self, leftovers: _Leftovers, deliveries: list[NatsDelivery], limit: int) -> list[NatsDelivery]:
        """`deliveries` and what more comes until they hold every record left unacknowledged, or until the leftovers'
        deadline (what does not come back by then was taken by another collector, or aged out of the stream)."""
        loop = asyncio.get_running_loop()
        back = {delivery.seq for delivery in deliveries if delivery.seq <= leftovers.up_to}
        while len(back) < leftovers.count and len(deliveries) < limit:
            if leftovers.until <= loop.time():
                logger.info(
                    "records left unacknowledged did not all come back; chaining those that did",
                    extra={"left": leftovers.count, "back": len(back)},
                )
                break
            try:
                more = await self._take(limit - len(deliveries), leftovers.until)
            except StoreUnavailable as exc:
                # Handed back, what is in hand would come back after the ack wait, behind newer records.
                logger.info("records left unacknowledged go on without the rest", extra={"error": str(exc)})
                break
            deliveries += more
            back.update(delivery.seq for delivery in more if delivery.seq <= leftovers.up_to)
        return deliveries

    async def pending(self) -> int:
        """Records published and not chained yet: waiting for delivery plus delivered and unacknowledged."""
        with _store("read the collector consumer"):
            info = await self._js.consumer_info(names.AUDIT_STREAM, names.AUDIT_COLLECTOR, timeout=REQUEST_TIMEOUT)
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)


class JetStreamLedger:
    """The chain on subject `saip.audit.ledger` of the SAIP_AUDIT stream."""

    def __init__(self, nc: NatsClient, *, timeout: float = REQUEST_TIMEOUT) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=timeout)

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

    async def append_batch(self, entries: Sequence[events_pb2.LedgerEntry], expected_seq: int) -> int:
        """One atomic batch (JetStream's batch headers): the messages before the last go out without waiting, and
        the last commits them, all or none, its acknowledgement naming the last sequence."""
        batch_id = uuid.uuid4().hex
        last = len(entries)
        reply = None
        with _store("append a batch to the ledger"):
            for number, entry in enumerate(entries, start=1):
                headers = {
                    BATCH_ID: batch_id,
                    BATCH_SEQUENCE: str(number),
                    Header.MSG_ID: LEDGER_ID_PREFIX + entry.source_id,
                }
                if number == 1:
                    headers[Header.EXPECTED_LAST_SUBJECT_SEQUENCE] = str(expected_seq)
                data = entry.SerializeToString(deterministic=True)
                if number < last:
                    await self._nc.publish(names.AUDIT_LEDGER, data, headers=headers)
                else:
                    headers[BATCH_COMMIT] = "1"
                    reply = await self._nc.request(names.AUDIT_LEDGER, data, timeout=REQUEST_TIMEOUT, headers=headers)
        answer = json.loads(reply.data) if reply is not None and reply.data else {}
        error = answer.get("error")
        if error is None and "seq" in answer:
            return int(answer["seq"])
        code = error.get("err_code") if isinstance(error, dict) else None
        description = str(error.get("description", "")) if isinstance(error, dict) else repr(answer)
        if code == WRONG_LAST_SEQUENCE:
            raise ChainMoved(description)
        if code in (BATCH_HOLDS_DUPLICATE, ATOMIC_DISABLED):
            raise BatchRefused(description)
        # Abandoned or incomplete (a message lost on a reconnect): nothing was stored, the batch can be sent again.
        raise StoreUnavailable(f"append a batch to the ledger: {description}")

    async def chained_since(self, seq: int) -> list[str]:
        _, last = await self.bounds()
        async with contextlib.aclosing(self.read(max(seq + 1, last - CATCH_UP_SPAN + 1), last)) as messages:
            entries = [decode_entry(message.data) async for message in messages]
        return [entry.source_id for entry in entries if entry is not None]

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
        consumer = ""
        try:
            with _store("open a ledger reader"):
                info = await sub.consumer_info()
            consumer = info.name
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
            await self._close(sub, consumer)

    async def _close(self, sub: JetStreamContext.PushSubscription, consumer: str) -> None:
        """Unsubscribe, then delete the reader's consumer: unsubscribing alone leaves it on the server until its
        inactivity threshold, so a burst of reads (monitor calls, REST queries) would pile consumers up to the
        account's limit, which every service on the account shares."""
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()
        if consumer:
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await self._js.delete_consumer(names.AUDIT_STREAM, consumer)

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

        The messages are taken by the subscription's callback and handed on in bursts: waiting for each one alone
        (`next_msg`) costs a task and a timer per message, on a follower that sees every entry of the chain.
        """
        arrived: deque[LedgerMessage] = deque()
        wake = asyncio.Event()

        async def received(msg: Msg) -> None:
            arrived.append(LedgerMessage(seq=stream_sequence(msg), data=msg.data))
            wake.set()

        sub = await self._ledger_from(from_seq, idle_heartbeat=FOLLOW_HEARTBEAT, cb=received)
        consumer = ""
        try:
            with _store("open a ledger follower"):
                consumer = (await sub.consumer_info()).name
            while True:
                while arrived:
                    yield arrived.popleft()
                wake.clear()
                # In this task: `wait_for` would make a task of its own for every wait, one per message under load.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FOLLOW_HEARTBEAT):
                        await wake.wait()
                if self._nc.is_closed:
                    raise StoreUnavailable("follow the ledger: the NATS connection is closed")
        finally:
            await self._close(sub, consumer)


async def ensure_audit_stream(js: JetStreamContext, settings: SaipSettings) -> None:
    """Create SAIP_AUDIT, or bring it to the configured limits."""
    with _store("create the audit stream"):
        await jetstream.ensure_stream(js, jetstream.audit_stream_config(settings))


async def keep_traces(nc: NatsClient, store: TraceStore) -> None:
    """Every span batch published on saip.traces.> into `store`, for the connection's life (the drain ends it). Each
    audit replica subscribes on its own, not in a queue group, so every replica keeps every trace."""

    async def kept(msg: Msg) -> None:
        try:
            store.add(decode(msg.data))
        except ValueError:
            logger.debug("a message that is not a span batch was left out", extra={"subject": msg.subject})

    await nc.subscribe(names.TRACES_SUBJECTS, cb=kept, pending_msgs_limit=TRACE_BACKLOG)
