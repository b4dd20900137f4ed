"""The chain math: genesis, links, hashes, and what counts as an entry."""

from __future__ import annotations

import hashlib

from saip.audit import chain
from saip.audit.chain import GENESIS, GENESIS_HASH
from tests.unit.audit.samples import CHAINED_AT, chain_of, management_call


def test_the_first_entry_links_to_32_zero_bytes() -> None:
    entry = chain.link(GENESIS, b"record", "m-1", CHAINED_AT)

    assert entry.index == 1
    assert entry.prev_hash == bytes(32) == GENESIS_HASH
    assert entry.hash == hashlib.sha256(bytes(32) + b"record").digest()
    assert entry.source_id == "m-1"
    assert entry.chained_at.ToDatetime().replace(tzinfo=CHAINED_AT.tzinfo) == CHAINED_AT


def test_each_entry_links_to_the_hash_of_the_one_before() -> None:
    first, second, third = chain_of([management_call("a"), management_call("b"), management_call("c")])

    assert [first.index, second.index, third.index] == [1, 2, 3]
    assert second.prev_hash == first.hash
    assert third.prev_hash == second.hash
    assert third.hash == hashlib.sha256(second.hash + third.record).digest()


def test_the_hash_commits_to_both_the_record_and_the_previous_hash() -> None:
    base = chain.entry_hash(GENESIS_HASH, b"record")

    assert chain.entry_hash(GENESIS_HASH, b"recorD") != base
    assert chain.entry_hash(b"\x01" + bytes(31), b"record") != base


def test_a_head_is_taken_from_an_entry_and_its_stream_sequence() -> None:
    (entry,) = chain_of([management_call("a")])

    head = chain.head_of(entry, seq=42)

    assert (head.index, head.hash, head.seq, head.source_id) == (1, entry.hash, 42, "a")
    assert head.hash_hex == entry.hash.hex()


def test_bytes_that_are_not_an_entry_are_not_decoded_as_one() -> None:
    (entry,) = chain_of([management_call("a")])
    short_hash = type(entry)()
    short_hash.CopyFrom(entry)
    short_hash.hash = b"\x01"

    assert chain.decode_entry(entry.SerializeToString()) == entry
    assert chain.decode_entry(b"\xff\xff\xff") is None
    assert chain.decode_entry(b"") is None
    assert chain.decode_entry(short_hash.SerializeToString()) is None
