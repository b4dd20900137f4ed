"""The library keeps each authored tool's parsed entry for the revision and the bytes it was read at: a call parses a
record once a revision, and never answers from an entry that the store has moved past."""

from __future__ import annotations

from typing import Any

import pytest

from saip.common.secret_source import SecretSource
from saip.tools.config import DECLARED_KEY, SECRETS_KEY
from saip.tools.errors import UnreadableRecord
from saip.tools.library import Library, key_of
from saip.v1 import tools_pb2
from tests.unit.tools.fakes import MemoryRecords
from tests.unit.tools.specs import text


def library(records: MemoryRecords) -> Library:
    return Library(
        records=records, bundled={}, declared={}, declared_key=DECLARED_KEY, secrets=SecretSource({}, SECRETS_KEY)
    )


def record(**changes: Any) -> bytes:
    return tools_pb2.ToolRecord(spec_json=text(**changes), state=tools_pb2.TOOL_STATE_PUBLISHED).SerializeToString()


async def test_a_revision_is_parsed_once_and_a_new_revision_is_read_at_once() -> None:
    records = MemoryRecords()
    tools = library(records)
    first = records.put(key_of("adder"), record(description="First."))

    read = await tools.required("adder")
    assert (read.revision, read.spec.description) == (first, "First.")
    assert await tools.required("adder") is read  # the same revision: the entry parsed before

    second = records.put(key_of("adder"), record(description="Second."))
    changed = await tools.required("adder")
    assert (changed.revision, changed.spec.description) == (second, "Second.")


async def test_the_same_revision_with_other_bytes_is_parsed_again() -> None:
    """A bucket made anew starts its revisions over: an entry is kept for its revision and its bytes together."""
    records = MemoryRecords()
    tools = library(records)
    revision = records.put(key_of("adder"), record(description="Before the bucket was made anew."))
    assert (await tools.required("adder")).spec.description == "Before the bucket was made anew."

    records.values[key_of("adder")] = (record(description="After."), revision)
    assert (await tools.required("adder")).spec.description == "After."


async def test_a_deleted_tool_is_not_found_and_a_tool_of_the_same_name_is_read_afresh() -> None:
    records = MemoryRecords()
    tools = library(records)
    revision = records.put(key_of("adder"), record(description="Old."))
    await tools.required("adder")

    await records.delete(key_of("adder"), revision)
    assert await tools.entry("adder") is None

    records.put(key_of("adder"), record(description="New."))
    assert (await tools.required("adder")).spec.description == "New."


async def test_an_unreadable_revision_is_refused_each_time_and_never_kept() -> None:
    records = MemoryRecords()
    tools = library(records)
    records.put(key_of("adder"), b"\xff not a record")
    for _ in range(2):
        with pytest.raises(UnreadableRecord, match="cannot be read"):
            await tools.required("adder")

    records.put(key_of("adder"), record(description="Saved again."))
    assert (await tools.required("adder")).spec.description == "Saved again."
