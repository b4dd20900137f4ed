"""In-memory fakes of the collector's ports: a RecordSource of deliveries that remember how they were settled, and a
Ledger that keeps JetStream's rules (expected last sequence, message-id duplicates, all-or-nothing batches), with
hooks to make an append fail or to let another writer append first."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from saip.audit import chain, records
from saip.audit.chain import GENESIS, ChainHead
from saip.audit.errors import BatchRefused, ChainMoved
from saip.audit.ports import Appended
from saip.v1 import events_pb2
from tests.unit.audit.samples import CHAINED_AT


@dataclass
class FakeDelivery:
    """One delivery; `settled` says how it ended (None while it is in hand), `log` is shared with the ledger so a
    test can see what happened in which order."""

    data: bytes
    subject: str
    seq: int
    log: list[str]
    settled: str | None = None
    headers: Mapping[str, str] | None = None

    async def ack(self) -> None:
        self.settled = "acked"
        self.log.append(f"ack {self.seq}")

    async def reject(self) -> None:
        self.settled = "rejected"
        self.log.append(f"reject {self.seq}")


class FakeSource:
    """Deliveries in the order they were put, handed out in batches; `batch` waits while there are none."""

    def __init__(self, log: list[str] | None = None) -> None:
        self.log = log if log is not None else []
        self.delivered: list[FakeDelivery] = []
        self._queue: deque[FakeDelivery] = deque()
        self._arrived = asyncio.Event()
        self._seq = 0

    def put(self, *items: events_pb2.AuditRecord | bytes, subject: str | None = None) -> list[FakeDelivery]:
        """Publish records (or raw bytes) as deliveries, on their kind's subject unless `subject` is given."""
        put = []
        for item in items:
            self._seq += 1
            data = item if isinstance(item, bytes) else item.SerializeToString()
            where = subject or (records.subject_of(item) if not isinstance(item, bytes) else "saip.audit.x.y")
            put.append(FakeDelivery(data, where, self._seq, self.log))
        self._queue.extend(put)
        self.delivered.extend(put)
        self._arrived.set()
        return put

    def redeliver(self, delivery: FakeDelivery) -> None:
        """The same record again, as JetStream sends one whose acknowledgement it never got."""
        again = FakeDelivery(delivery.data, delivery.subject, delivery.seq, self.log)
        self._queue.append(again)
        self.delivered.append(again)
        self._arrived.set()

    @property
    def settled(self) -> bool:
        return not self._queue and all(delivery.settled for delivery in self.delivered)

    async def batch(self, limit: int) -> list[FakeDelivery]:
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        return [self._queue.popleft() for _ in range(min(limit, len(self._queue)))]


@dataclass
class FakeLedger:
    """The ledger subject as a list of (stream sequence, entry). Sequences advance by two per message, as in
    SAIP_AUDIT where records sit between the ledger's messages.

    `failures` are raised by the next appends, one each. `before_append` runs before an append is checked, as
    another writer would act just before ours reaches the store.
    """

    log: list[str] = field(default_factory=list)
    stored: list[tuple[int, events_pb2.LedgerEntry]] = field(default_factory=list)
    failures: deque[Exception] = field(default_factory=deque)
    before_append: Callable[[FakeLedger], object] | None = None
    appends: list[int] = field(default_factory=list)  # entries per accepted append, in order

    @property
    def last_seq(self) -> int:
        return self.stored[-1][0] if self.stored else 0

    @property
    def ids(self) -> list[str]:
        return [entry.source_id for _, entry in self.stored]

    def write(self, entry: events_pb2.LedgerEntry) -> int:
        """Store an entry without any check (another writer's append, or a test's setup)."""
        seq = self.last_seq + 2
        self.stored.append((seq, entry))
        return seq

    def extend_with(self, record: events_pb2.AuditRecord) -> events_pb2.LedgerEntry:
        """Append `record` onto the head as another collector would."""
        data = record.SerializeToString(deterministic=True)
        entry = chain.link(self._head(), data, records.record_id(record), CHAINED_AT)
        self.write(entry)
        return entry

    def _head(self) -> ChainHead:
        if not self.stored:
            return GENESIS
        seq, entry = self.stored[-1]
        return chain.head_of(entry, seq)

    def _checked(self) -> None:
        if self.before_append is not None:
            hook, self.before_append = self.before_append, None
            hook(self)
        if self.failures:
            raise self.failures.popleft()

    async def head(self) -> ChainHead:
        return self._head()

    async def append(self, entry: events_pb2.LedgerEntry, expected_seq: int) -> Appended:
        self._checked()
        for seq, stored in self.stored:
            if stored.source_id == entry.source_id:
                return Appended(seq=seq, duplicate=True)  # the message id is checked before the sequence
        if expected_seq != self.last_seq:
            raise ChainMoved(f"wrong last sequence: {self.last_seq}")
        self.appends.append(1)
        self.log.append(f"append {entry.source_id}")
        return Appended(seq=self.write(entry), duplicate=False)

    async def append_batch(self, entries: Sequence[events_pb2.LedgerEntry], expected_seq: int) -> int:
        self._checked()
        if expected_seq != self.last_seq:
            raise ChainMoved(f"wrong last sequence: {self.last_seq}")
        if {entry.source_id for entry in entries} & set(self.ids):
            raise BatchRefused("atomic publish batch contains duplicate message id")
        self.appends.append(len(entries))
        self.log.append("append " + " ".join(entry.source_id for entry in entries))
        for entry in entries:
            self.write(entry)
        return self.last_seq

    async def chained_since(self, seq: int) -> list[str]:
        return [entry.source_id for at, entry in self.stored if at > seq]
