"""The chain on subject `saip.audit.ledger` of the SAIP_AUDIT stream: its head, optimistic appends one at a time or
as atomic batches, bounded reads back and a follower of what is appended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy, Header

from saip.audit.chain import GENESIS, ChainHead, LedgerMessage, decode_entry, head_of
from saip.audit.clients.store import REQUEST_TIMEOUT, store, stream_sequence
from saip.audit.collector import BATCH
from saip.audit.errors import BatchRefused, ChainMoved, StoreUnavailable
from saip.audit.ports import Appended, Window
from saip.common import names
from saip.v1 import events_pb2

logger = logging.getLogger(__name__)

# On a moved head, the ledger is read back at most this many stream sequences to learn what was chained meanwhile;
# a record chained before that is recognised by its message id instead.
CATCH_UP_SPAN = 4 * BATCH * 8
READ_STALL = 5.0  # a bounded read that receives nothing for this long is reported as unavailable
FOLLOW_HEARTBEAT = 1.0  # the follower notices a restarted server within two heartbeats and resumes
FIRST_WINDOW = 128
MAX_WINDOW = 8192
LEDGER_ID_PREFIX = "ledger:"
WRONG_LAST_SEQUENCE = 10071
ATOMIC_DISABLED = 10174
BATCH_HOLDS_DUPLICATE = 10201
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"


class JetStreamLedger:
    """The chain on subject `saip.audit.ledger` of the SAIP_AUDIT stream."""

    def __init__(self, nc: NatsClient, *, timeout: float = REQUEST_TIMEOUT) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=timeout)

    async def last_message(self) -> LedgerMessage | None:
        try:
            with store("read the last ledger message"):
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
            with store("append to the ledger"):
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
        with store("append a batch to the ledger"):
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
        with store("read the stream state"):
            info = await self._js.stream_info(names.AUDIT_STREAM)
        return int(info.state.first_seq), last.seq

    async def _ledger_from(
        self, start_seq: int, since: datetime | None = None, **options: Any
    ) -> JetStreamContext.PushSubscription:
        """An ordered consumer of the ledger subject starting at `start_seq`, or at the first message stored at
        `since` or later."""
        if since is not None:
            policy, config = DeliverPolicy.BY_START_TIME, ConsumerConfig(opt_start_time=since)
        else:
            policy, config = DeliverPolicy.BY_START_SEQUENCE, ConsumerConfig(opt_start_seq=max(start_seq, 1))
        with store("open a ledger reader"):
            return await self._js.subscribe(
                names.AUDIT_LEDGER,
                stream=names.AUDIT_STREAM,
                ordered_consumer=True,
                deliver_policy=policy,
                config=config,
                **options,
            )

    async def read(
        self, start_seq: int, end_seq: int, since: datetime | None = None
    ) -> AsyncGenerator[LedgerMessage, None]:
        """The ledger messages with stream sequence in [start_seq, end_seq], oldest first (with `since`: from the first
        one chained at that time or later)."""
        if end_seq < start_seq:
            return
        sub = await self._ledger_from(start_seq, since)
        consumer = ""
        try:
            with store("open a ledger reader"):
                info = await sub.consumer_info()
            consumer = info.name
            # The consumer pushes at once, so what matched from start_seq is what it delivered plus what waits.
            if not (info.num_pending or 0) + (info.delivered.consumer_seq if info.delivered else 0):
                return
            while True:
                with store("read the ledger"):
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
        with store("read the stream state"):
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
            with store("open a ledger follower"):
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
