"""The ingest: each published record, in stream order and one at a time, masked, linked onto the chain,
logged and counted, and only then acknowledged.

Exactly-once chaining rests on three things: the ledger append carries `Nats-Msg-Id = ledger:<record id>`
(JetStream drops a second append of the same record within its duplicate window), it expects the ledger
subject's last sequence (a second collector that appended first makes it fail instead of forking the
chain), and the collector remembers the ids it has seen chained (a record redelivered after a crash between
append and acknowledgement is recognised however late it comes back).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential

from saip.audit import chain, records
from saip.audit.chain import GENESIS, ChainHead
from saip.audit.errors import ChainMoved, RecordRejected, StoreUnavailable
from saip.audit.metrics import AuditMetrics
from saip.common.masking import Masker
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

R = TypeVar("R")

# Record ids remembered as chained; a redelivery is always of a recent record, so this is plenty.
REMEMBERED_IDS = 10_000


class Delivery(Protocol):
    """One delivery of a published record; it is redelivered until acknowledged or rejected."""

    @property
    def data(self) -> bytes: ...

    @property
    def subject(self) -> str: ...

    @property
    def seq(self) -> int: ...

    async def ack(self) -> None: ...

    async def reject(self) -> None:
        """Never deliver this one again (it cannot be chained)."""
        ...


class RecordSource(Protocol):
    """The published records, in stream order."""

    async def next(self) -> Delivery | None:
        """The next record, or None when none arrived within the source's wait."""
        ...


@dataclass(frozen=True, slots=True)
class Appended:
    seq: int  # stream sequence of the ledger message
    duplicate: bool  # the store already held an append of this record


class Ledger(Protocol):
    """The chain as stored: its head, and appends that cannot fork it."""

    async def head(self) -> ChainHead: ...

    async def append(self, entry: events_pb2.LedgerEntry, expected_seq: int) -> Appended:
        """Append unless the ledger's last message is no longer `expected_seq`.

        Raises:
            ChainMoved: another writer appended after `expected_seq`.
        """
        ...


class RecentIds:
    """The ids of the last `capacity` records chained, oldest forgotten first."""

    def __init__(self, capacity: int = REMEMBERED_IDS, ids: Iterable[str] = ()) -> None:
        self._order: deque[str] = deque()
        self._ids: set[str] = set()
        self._capacity = capacity
        for record_id in ids:
            self.add(record_id)

    def add(self, record_id: str) -> None:
        if not record_id or record_id in self._ids:
            return
        if len(self._order) >= self._capacity:
            self._ids.discard(self._order.popleft())
        self._order.append(record_id)
        self._ids.add(record_id)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self._ids


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    logger.warning("audit store unavailable; retrying", extra={"error": str(error), "attempt": state.attempt_number})


class Collector:
    """Chains every record the source delivers; `start` runs it in a task, `stop` lets the record in hand finish."""

    def __init__(
        self,
        source: RecordSource,
        ledger: Ledger,
        masker: Masker,
        metrics: AuditMetrics,
        *,
        chained_ids: Iterable[str] = (),
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._source = source
        self._ledger = ledger
        self._masker = masker
        self._metrics = metrics
        self._clock = clock
        self._recent = RecentIds(ids=chained_ids)
        self._head = GENESIS
        self._stopping = False
        self._busy = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self._run(), name="audit-collector")
        return self._task

    async def stop(self, grace: float = 5.0) -> None:
        """Stop taking records; the one in hand is chained and acknowledged first (within `grace` seconds)."""
        self._stopping = True
        task = self._task
        if task is None or task.done():
            return
        if not self._busy:
            task.cancel()  # waiting for a record: nothing is in hand
        _, unfinished = await asyncio.wait({task}, timeout=grace)
        if unfinished:
            logger.warning("record in hand not finished within the grace; it will be redelivered")
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        self._head = await self._retry(self._ledger.head)
        self._recent.add(self._head.source_id)
        logger.info("collector started", extra={"index": self._head.index, "head_seq": self._head.seq})
        while not self._stopping:
            delivery = await self._retry(self._source.next)
            if delivery is None:
                continue
            self._busy = True
            try:
                await self._handle(delivery)
            finally:
                self._busy = False

    async def _handle(self, delivery: Delivery) -> None:
        """Chain one delivered record (unless it is chained already), then acknowledge it."""
        try:
            record = records.parse(delivery.data)
        except RecordRejected as exc:
            logger.warning(
                "record rejected",
                extra={"reason": exc.reason, "error": str(exc), "subject": delivery.subject, "seq": delivery.seq},
            )
            self._metrics.rejected_records.labels(exc.reason).inc()
            await self._settle(delivery.reject())
            return
        masked = records.mask(record, self._masker)
        if records.subject_of(masked) != delivery.subject:
            logger.warning(
                "record published on another kind's subject; chained as what it is",
                extra={"subject": delivery.subject, "record_id": records.record_id(masked)},
            )
        entry = await self._chain(masked)
        if entry is None:
            self._metrics.duplicate_records.inc()
            logger.info("record already chained", extra={"record_id": records.record_id(masked), "seq": delivery.seq})
        else:
            self._observe(masked, entry)
        await self._settle(delivery.ack())

    async def _chain(self, record: events_pb2.AuditRecord) -> events_pb2.LedgerEntry | None:
        """Append the record's entry; None when the record was chained already."""
        source_id = records.record_id(record)
        if source_id in self._recent:
            return None
        data = record.SerializeToString(deterministic=True)
        while True:
            entry = chain.link(self._head, data, source_id, self._clock())
            expected = self._head.seq
            try:
                appended = await self._retry(functools.partial(self._ledger.append, entry, expected))
            except ChainMoved:
                self._metrics.chain_conflicts.inc()
                await self._reload_head()
                if self._head.source_id == source_id:
                    return None
                continue
            if appended.duplicate:
                await self._reload_head()
                self._recent.add(source_id)
                return None
            self._head = ChainHead(entry.index, entry.hash, appended.seq, source_id)
            self._recent.add(source_id)
            return entry

    async def _reload_head(self) -> None:
        self._head = await self._retry(self._ledger.head)
        self._recent.add(self._head.source_id)

    def _observe(self, record: events_pb2.AuditRecord, entry: events_pb2.LedgerEntry) -> None:
        chained_at = entry.chained_at.ToDatetime(tzinfo=UTC)
        record_time = records.record_time(record)
        lag = max(0.0, (chained_at - record_time).total_seconds()) if record_time is not None else None
        self._metrics.chained(records.signals(record), lag)
        warns = record.WhichOneof("record") == "risk" and record.risk.severity == common_pb2.SEVERITY_WARN
        logger.log(
            logging.WARNING if warns else logging.INFO,
            records.log_line(record),
            extra={"index": entry.index, "record_id": entry.source_id, "kind": records.kind_of(record)},
        )

    async def _settle(self, acknowledgement: Awaitable[None]) -> None:
        # A lost acknowledgement only means a redelivery, which is recognised and not chained again.
        try:
            await acknowledgement
        except StoreUnavailable as exc:
            logger.warning(
                "acknowledgement not sent; the record will come back and be recognised", extra={"error": str(exc)}
            )

    async def _retry(self, operation: Callable[[], Awaitable[R]]) -> R:
        """Run `operation` until the store answers (NATS restarts and reconnects are waited out)."""
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(StoreUnavailable),
            wait=wait_exponential(multiplier=0.05, max=2.0),
            before_sleep=_log_retry,
        ):
            with attempt:
                return await operation()
        raise AssertionError("unreachable: the retry loop only ends by returning or raising")
