"""The hash chain: each ledger entry commits to the record it carries and to the entry before it.

hash(n) = SHA-256(hash(n-1) || record bytes), with 32 zero bytes before the first entry. Changing a stored
record breaks its own hash; deleting or inserting an entry breaks the index sequence or the next link.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.message import DecodeError

from saip.v1 import events_pb2

HASH_SIZE = 32
GENESIS_HASH = bytes(HASH_SIZE)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class LedgerMessage:
    """One message of the ledger subject as the stream holds it: its stream sequence and its bytes."""

    seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last entry of the chain: what the next entry links to.

    `seq` is the stream sequence of the last ledger message (0 when there is none); the next append
    expects it, which is how two writers are kept from forking the chain.
    """

    index: int
    hash: bytes
    seq: int
    source_id: str

    @property
    def hash_hex(self) -> str:
        return self.hash.hex()


GENESIS = ChainHead(index=0, hash=GENESIS_HASH, seq=0, source_id="")


def entry_hash(prev_hash: bytes, record: bytes) -> bytes:
    return hashlib.sha256(prev_hash + record).digest()


def link(head: ChainHead, record: bytes, source_id: str, chained_at: datetime) -> events_pb2.LedgerEntry:
    """The entry that extends `head` with `record` (the serialized, masked AuditRecord), chained at `chained_at`
    (an aware datetime)."""
    entry = events_pb2.LedgerEntry(
        index=head.index + 1,
        prev_hash=head.hash,
        hash=entry_hash(head.hash, record),
        record=record,
        source_id=source_id,
    )
    # Exact microseconds by timedelta arithmetic: FromDatetime goes through calendar.timegm, a cost per entry that
    # shows at thousands of entries a second.
    entry.chained_at.FromMicroseconds((chained_at - EPOCH) // MICROSECOND)
    return entry


def decode_entry(data: bytes) -> events_pb2.LedgerEntry | None:
    """The ledger entry in `data`, or None when the bytes are not one (a forged or damaged message)."""
    entry = events_pb2.LedgerEntry()
    try:
        entry.ParseFromString(data)
    except DecodeError:
        return None
    if entry.index < 1 or len(entry.hash) != HASH_SIZE or len(entry.prev_hash) != HASH_SIZE:
        return None
    return entry


def head_of(entry: events_pb2.LedgerEntry, seq: int) -> ChainHead:
    return ChainHead(index=entry.index, hash=entry.hash, seq=seq, source_id=entry.source_id)
