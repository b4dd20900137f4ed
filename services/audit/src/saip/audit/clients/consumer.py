"""The collector's durable consumer on the record subjects: batches of records in stream order, each acknowledged
once it is chained."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DEFAULT_PREFIX, AckPolicy, ConsumerConfig, DeliverPolicy, Header, StatusCode

from saip.audit.clients.store import REQUEST_TIMEOUT, store, stream_sequence
from saip.audit.collector import BATCH
from saip.audit.errors import StoreUnavailable
from saip.common import names

logger = logging.getLogger(__name__)

FETCH_WAIT = 5.0  # how long one pull request stands on the consumer before the collector sends another
# How often a batch waiting for records checks that its pull request still stands (a reconnect drops it).
PULL_CHECK = 0.25
# How long a delivered record may stay unacknowledged before JetStream gives it to a collector again. The consumer
# lets one batch out at a time (max_ack_pending = the batch), so a crashed collector's batch is redelivered after
# this long, and nothing newer can be delivered until the batch's records are acknowledged, or redelivered.
ACK_WAIT = 5.0
# Where the collector consumer's pull requests go (saip's connections use JetStream's default API prefix).
PULL_SUBJECT = f"{DEFAULT_PREFIX}.CONSUMER.MSG.NEXT.{names.AUDIT_STREAM}.{names.AUDIT_COLLECTOR}"


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
        with store("acknowledge a record"):
            await self.msg.ack()

    async def reject(self) -> None:
        with store("terminate a record"):
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
        with store("create the collector consumer"):
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
        with store("request records"):
            await self._nc.publish(PULL_SUBJECT, json.dumps(request).encode(), reply=reply)
        self._pull = _Pull(reply, int(self._config.max_ack_pending or BATCH), now + self._fetch_wait, reconnects)

    async def _take(self, limit: int, until: float) -> list[NatsDelivery]:
        """The records in the buffer, up to `limit`, once there is one; [] when none came before loop time `until`."""
        loop = asyncio.get_running_loop()
        while not self._arrived:
            if (failure := self._failure) is not None:
                self._failure = None
                with store("fetch records"):
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
        with store("read the collector consumer"):
            info = await self._js.consumer_info(names.AUDIT_STREAM, names.AUDIT_COLLECTOR, timeout=REQUEST_TIMEOUT)
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)
