"""The ingest: the published records (`ports.RecordSource`), a batch at a time in stream order, masked, linked onto
the chain and appended together (`ports.Ledger`), logged and counted, and only then acknowledged, so a record is
never acknowledged before its entry is stored.

A batch is one atomic append: its entries, linked one after another from the head, are stored all together or not
at all, and the first expects the ledger subject's last sequence, so an append from a stale head (a second
collector appended first) fails instead of forking the chain. One round trip chains a whole batch; a batch of a
few records, cheaper so, goes one append each, each expecting the one before. Exactly-once
chaining rests on three things: each append names its record (`Nats-Msg-Id = ledger:<record id>`: JetStream refuses
a batch holding a record it already has within its duplicate window, and the entries then go one at a time, each
repeat recognised); the collector remembers the ids it has seen chained; and when an append finds the head moved,
it reads what was chained since its head and leaves that out before it links again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from saip.audit import chain, records
from saip.audit.chain import GENESIS, ChainHead
from saip.audit.errors import BatchRefused, ChainMoved, RecordRejected, StoreUnavailable
from saip.audit.metrics import AuditMetrics
from saip.audit.ports import Delivery, Ledger, Linked, RecordSource
from saip.common import lifecycle, tracing
from saip.common.masking import Masker
from saip.v1 import common_pb2, events_pb2

logger = logging.getLogger(__name__)

R = TypeVar("R")

# Records taken and appended at once; the consumer lets this many out unacknowledged (at most 1,000 in one atomic
# batch, JetStream's limit).
BATCH = 256
# A batch of this many records or more is appended atomically: one round trip, and one sync to disk (JetStream syncs
# an atomic batch's commit, which costs more than a few plain appends). Fewer go one append each.
# docs/BENCHMARKS.md, "Audit records per second", has both costs.
ATOMIC_FROM = 16
# Record ids remembered as chained: a redelivery is of a record chained within the ack wait (some seconds, tens of
# thousands at full rate); one older than that is still recognised by its message id.
REMEMBERED_IDS = 100_000
# Seconds between attempts while the store is away: the first wait, doubled after each failure up to the last.
RETRY_WAIT_FIRST = 0.05
RETRY_WAIT_MAX = 2.0

_SPANS = tracing.tracer("audit")


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


def _lag(record: events_pb2.AuditRecord, chained_at: datetime) -> float | None:
    """Seconds from the record's own time to its chaining; None when the record has no time."""
    happened = records.record_seconds(record)
    return max(0.0, chained_at.timestamp() - happened) if happened is not None else None


@dataclass(slots=True)
class _Held:
    """A delivered record in hand: masked, and serialized as it will be chained."""

    delivery: Delivery
    record: events_pb2.AuditRecord
    data: bytes
    source_id: str
    chained: tuple[events_pb2.LedgerEntry, datetime] | None = None  # its entry and when, once chained here


class Collector:
    """Chains every record the source delivers; `start` runs it in a task, `stop` lets the batch in hand finish."""

    def __init__(
        self,
        source: RecordSource,
        ledger: Ledger,
        masker: Masker,
        metrics: AuditMetrics,
        *,
        chained_ids: Iterable[str] = (),
        clock: Callable[[], datetime] = _utc_now,
        batch: int = BATCH,
        atomic_from: int = ATOMIC_FROM,
        on_appended: Callable[[Sequence[Linked]], None] | None = None,
    ) -> None:
        """`on_appended` is told of every entry this collector appends, once the store holds it (the service's views
        take them from it rather than decode them again from the ledger)."""
        self._source = source
        self._ledger = ledger
        self._masker = masker
        self._metrics = metrics
        self._clock = clock
        self._batch = batch
        self._atomic_from = atomic_from
        self._on_appended = on_appended
        self._recent = RecentIds(ids=chained_ids)
        self._head = GENESIS
        self._stopping = False
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self._stopped: asyncio.Future[None] | None = None

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self._run(), name="audit-collector")
        return self._task

    @property
    def stopping(self) -> bool:
        """Told to stop: its task's end is the stop's, not a fault."""
        return self._stopping

    def stop_soon(self, grace: float = 5.0) -> asyncio.Future[None]:
        """Stop taking records and begin the stop, whose grace runs from now (see `stop`); the service calls this as
        its gRPC calls in flight get theirs, so the two graces run together. Returns the stop, begun once."""
        self._stopping = True
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop(grace))
        return self._stopped

    async def stop(self, grace: float = 5.0) -> None:
        """Stop taking records; the batch in hand is chained and acknowledged first, within `grace` seconds of the
        stop's beginning (`stop_soon`'s, when it was called). A batch not finished by then is left unacknowledged, so
        it is redelivered and each record already chained recognised. Ends within `grace` + `lifecycle.CANCEL_WITHIN`
        seconds of that beginning, whatever the task awaits."""
        await asyncio.shield(self.stop_soon(grace))

    async def _stop(self, grace: float) -> None:
        task = self._task
        if task is None or task.done():
            return
        if self._busy:
            await asyncio.wait({task}, timeout=grace)
            if not task.done():
                logger.warning("records in hand not finished within the grace; they will be redelivered")
        # Waiting for records (nothing is in hand), or out of time: a pull in nats-py can take the cancellation for
        # its own end and go on, so the task is cancelled until it ends.
        await lifecycle.cancelled(task)
        if task.done() and not task.cancelled() and (error := task.exception()) is not None:
            logger.error("the collector failed while stopping", exc_info=error)

    async def _run(self) -> None:
        self._head = await self._retry(self._ledger.head)
        self._recent.add(self._head.source_id)
        logger.info("collector started", extra={"index": self._head.index, "head_seq": self._head.seq})
        while not self._stopping:
            deliveries = await self._retry(functools.partial(self._source.batch, self._batch))
            if not deliveries:
                continue
            self._busy = True
            try:
                await self._handle(deliveries)
            finally:
                self._busy = False

    async def _handle(self, deliveries: Sequence[Delivery]) -> None:
        """Chain the delivered records (those not chained already) in one append, then acknowledge them all; each
        traced record's call gets the span of its chaining."""
        taken_ns = time.time_ns()
        held = [taken for delivery in deliveries if (taken := await self._take(delivery)) is not None]
        await self._chain(held)
        counted: list[tuple[records.Signals, float | None]] = []
        for item in held:
            if item.chained is None:
                self._metrics.duplicate_records.inc()
                logger.info("record already chained", extra={"record_id": item.source_id, "seq": item.delivery.seq})
                continue
            entry, chained_at = item.chained
            counted.append((records.signals(item.record), _lag(item.record, chained_at)))
            self._log(item.record, entry)
            headers = item.delivery.headers
            if headers and (parent := tracing.remote(headers.get(tracing.TRACEPARENT))) is not None:
                attributes = {"saip.record": records.kind_of(item.record) or "unknown", "saip.index": entry.index}
                _SPANS.record("audit chain", taken_ns, parent=parent, attributes=attributes)
        self._metrics.chained(counted)
        for item in held:
            await self._settle(item.delivery.ack())

    async def _take(self, delivery: Delivery) -> _Held | None:
        """The delivered record, masked; None when it is no record at all (then it is never delivered again)."""
        try:
            record = records.parse(delivery.data)
        except RecordRejected as exc:
            logger.warning(
                "record rejected",
                extra={"reason": exc.reason, "error": str(exc), "subject": delivery.subject, "seq": delivery.seq},
            )
            self._metrics.rejected_records.labels(exc.reason).inc()
            await self._settle(delivery.reject())
            return None
        masked = records.mask(record, self._masker)
        source_id = records.record_id(masked)
        if records.subject_of(masked) != delivery.subject:
            logger.warning(
                "record published on another kind's subject; chained as what it is",
                extra={"subject": delivery.subject, "record_id": source_id},
            )
        return _Held(delivery, masked, masked.SerializeToString(deterministic=True), source_id)

    def _unchained(self, held: Sequence[_Held]) -> list[_Held]:
        """The records of the batch not chained yet, each once (a record may be in a batch twice)."""
        todo, ids = [], set()
        for item in held:
            if item.chained is None and item.source_id not in self._recent and item.source_id not in ids:
                ids.add(item.source_id)
                todo.append(item)
        return todo

    async def _chain(self, held: Sequence[_Held]) -> None:
        """Append the entries of the records not chained yet, all in one batch from the head (a few go one at a
        time). When the head moved, learn what was chained meanwhile and link again; when the store refuses the
        batch, go one at a time."""
        while todo := self._unchained(held):
            if len(todo) < self._atomic_from:
                await self._chain_each(todo)
                return
            head, chained_at, entries = self._head, self._clock(), []
            for item in todo:
                entry = chain.link(head, item.data, item.source_id, chained_at)
                entries.append(entry)
                head = ChainHead(entry.index, entry.hash, 0, item.source_id)
            try:
                last_seq = await self._retry(functools.partial(self._ledger.append_batch, entries, self._head.seq))
            except ChainMoved:
                await self._overtaken()
                continue
            except BatchRefused as exc:
                logger.info("batch refused by the store; appending one at a time", extra={"error": str(exc)})
                await self._chain_each(todo)
                return
            for item, entry in zip(todo, entries, strict=True):
                item.chained = (entry, chained_at)
                self._recent.add(item.source_id)
            after_seq = self._head.seq
            self._head = ChainHead(entries[-1].index, entries[-1].hash, last_seq, entries[-1].source_id)
            first_seq = last_seq - len(entries) + 1  # an atomic batch is stored in one stretch
            self._appended(
                Linked(first_seq + n, first_seq + n - 1 if n else after_seq, entry, item.record, chained_at)
                for n, (item, entry) in enumerate(zip(todo, entries, strict=True))
            )

    async def _chain_each(self, todo: Sequence[_Held]) -> None:
        """One append per record, so a record the store holds already is found out (and left out) by itself."""
        for item in todo:
            while item.source_id not in self._recent:
                chained_at = self._clock()
                entry = chain.link(self._head, item.data, item.source_id, chained_at)
                try:
                    appended = await self._retry(functools.partial(self._ledger.append, entry, self._head.seq))
                except ChainMoved:
                    await self._overtaken()
                    continue
                if appended.duplicate:
                    self._recent.add(item.source_id)
                    await self._catch_up()
                    break
                item.chained = (entry, chained_at)
                self._recent.add(item.source_id)
                after_seq = self._head.seq
                self._head = ChainHead(entry.index, entry.hash, appended.seq, item.source_id)
                self._appended([Linked(appended.seq, after_seq, entry, item.record, chained_at)])

    def _appended(self, linked: Iterable[Linked]) -> None:
        if self._on_appended is not None:
            self._on_appended(list(linked))

    async def _overtaken(self) -> None:
        """Another writer appended first: count the conflict and catch up with it."""
        self._metrics.chain_conflicts.inc()
        await self._catch_up()

    async def _catch_up(self) -> None:
        """The head moved, or may have: take the ledger's head and remember every record chained after ours."""
        since = self._head.seq
        self._head = await self._retry(self._ledger.head)
        if self._head.seq != since:
            for source_id in await self._retry(functools.partial(self._ledger.chained_since, since)):
                self._recent.add(source_id)
        self._recent.add(self._head.source_id)

    def _log(self, record: events_pb2.AuditRecord, entry: events_pb2.LedgerEntry) -> None:
        warns = record.WhichOneof("record") == "risk" and record.risk.severity == common_pb2.SEVERITY_WARN
        level = logging.WARNING if warns else logging.INFO
        if logger.isEnabledFor(level):  # thousands a second: the line is not even made when it is not logged
            logger.log(
                level,
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
        """Run `operation` until the store answers (NATS restarts and reconnects are waited out), waiting 50 ms after
        the first failure and twice as long after each next one, 2 s at most.

        A loop of its own rather than tenacity's `AsyncRetrying`, whose set-up around every operation costs more than
        this whole loop when the operation succeeds at once, as nearly every one does (two a batch: the fetch and the
        append, so two a call when calls come one at a time)."""
        attempt, wait = 1, RETRY_WAIT_FIRST
        while True:
            try:
                return await operation()
            except StoreUnavailable as exc:
                logger.warning("audit store unavailable; retrying", extra={"error": str(exc), "attempt": attempt})
            await asyncio.sleep(wait)
            attempt, wait = attempt + 1, min(RETRY_WAIT_MAX, wait * 2)
