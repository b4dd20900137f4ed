"""Tool Studio runs exactly the revision an approval described, or refuses and changes nothing: publish, test,
delete and the exposure of listed tools, each with the record moved on since it was read."""

from __future__ import annotations

import pytest

from saip.tools.errors import Conflict
from saip.v1 import tools_pb2
from tests.unit.tools import fakes
from tests.unit.tools.fakes import Parts
from tests.unit.tools.specs import text

CHANGED = r"'adder' changed since the question was asked \(revision {asked}, now {now}\); read it again and ask again"


async def draft_with_pass(parts: Parts) -> int:
    """A draft with its Local Pass; returns the revision a plan reads of it."""
    await parts.studio.save_draft(text("adder"), 0)
    assert (await parts.studio.test("adder", "")).passed
    return (await parts.studio.check_risk("adder", "")).revision


async def rewritten(parts: Parts, read: int, **changes: object) -> int:
    """A second session rewrites the draft and gives it its own Local Pass; returns the new revision."""
    await parts.studio.save_draft(text("adder", **changes), read)
    assert (await parts.studio.test("adder", "")).passed
    return (await parts.studio.check_risk("adder", "")).revision


async def test_publish_refuses_a_draft_rewritten_since_the_question_and_publishes_nothing() -> None:
    parts = fakes.studio()
    read = await draft_with_pass(parts)
    now = await rewritten(parts, read, sandbox={"networkMode": "open"}, humanInTheLoop={"mode": "DISABLED"})
    with pytest.raises(Conflict, match=CHANGED.format(asked=read, now=now)):
        await parts.studio.publish("adder", read)
    assert (await parts.studio.get("adder")).summary.state == tools_pb2.TOOL_STATE_DRAFT
    assert await parts.published.served() == []
    published = await parts.studio.publish("adder", now)
    assert published.state == tools_pb2.TOOL_STATE_PUBLISHED


async def test_a_test_runs_the_revision_read_or_nothing() -> None:
    parts = fakes.studio()
    await parts.studio.save_draft(text("adder"), 0)
    read = (await parts.studio.check_risk("adder", "")).revision
    await parts.studio.save_draft(text("adder", sandbox={"networkMode": "open"}), read)
    now = (await parts.studio.check_risk("adder", "")).revision
    with pytest.raises(Conflict, match=CHANGED.format(asked=read, now=now)):
        await parts.studio.test("adder", "", read)
    assert parts.runner.jobs == []
    assert not (await parts.studio.get("adder")).last_test.at.seconds


async def test_a_local_pass_belongs_to_the_revision_that_ran() -> None:
    parts = fakes.studio()
    await parts.studio.save_draft(text("adder"), 0)
    read = (await parts.studio.check_risk("adder", "")).revision
    await parts.studio.test("adder", "", read)
    detail = await parts.studio.get("adder")
    assert (detail.last_test.passed, detail.last_test.revision) == (True, read)


async def test_delete_refuses_a_tool_changed_since_the_question_and_deletes_nothing() -> None:
    parts = fakes.studio()
    read = await draft_with_pass(parts)
    now = await rewritten(parts, read, description="Adds two integers, now differently.")
    with pytest.raises(Conflict, match=CHANGED.format(asked=read, now=now)):
        await parts.studio.delete("adder", read)
    assert (await parts.studio.get("adder")).summary.revision == now
    assert (await parts.studio.delete("adder", now)).name == "adder"


async def test_exposure_refuses_a_listed_tool_changed_since_the_question_and_keeps_the_setting() -> None:
    parts = fakes.studio()
    read = await draft_with_pass(parts)
    await parts.studio.publish("adder", read)
    published = (await parts.studio.check_risk("adder", "")).revision
    # Deleted and published again under the same name (another tool, another risk) while the person read.
    await parts.studio.delete("adder", published)
    await parts.studio.save_draft(text("adder", sandbox={"networkMode": "open"}), 0)
    await parts.studio.test("adder", "")
    await parts.studio.publish("adder")
    now = (await parts.studio.check_risk("adder", "")).revision
    before = await parts.exposure.read()
    with pytest.raises(Conflict, match=CHANGED.format(asked=published, now=now)):
        await parts.exposure.set(False, ["adder"], 0, {"adder": published})
    assert await parts.exposure.read() == before
    assert list((await parts.exposure.set(False, ["adder"], 0, {"adder": now})).tools) == ["adder"]
