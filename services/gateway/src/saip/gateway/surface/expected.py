"""Approvals bind what they describe: the server state a plan read, carried from the question to the service.

A planner that reads server state to write its question (a draft's risk, a pipeline's documents) returns what it
read with the approval: one `Read` per thing, its revision or definition hash. The gate decides whether to ask on
that same read; a 2026-07-28 question seals the reads into its state, and the retry's fresh plan must read the same
revisions, or the call is refused; the handler receives them as an `Expected` and hands each to the owning service,
which changes exactly that revision or refuses with `changed_since_asked`, changing nothing.

    async def plan_publish(self, arguments: NameInput) -> Approval:
        report = await self.client.check_risk(name=arguments.name)
        return Approval(Level.DESTRUCTIVE, f"publish '{report.name}' ...",
                        expected=Expected.of(Read(report.name, f"the draft '{report.name}'", report.revision)))

    @tool(Level.DESTRUCTIVE, "Publish a tool", planner=plan_publish)
    async def publish(self, arguments: NameInput, expected: Expected = NOTHING) -> ManagementResult:
        await self.client.publish(arguments.name, expected.revision(arguments.name, 0))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from saip.common.approval_sentences import changed_since_asked

Revision = int | str
V = TypeVar("V", int, str)


@dataclass(frozen=True)
class Read:
    """One thing a plan read: its name to the service (`subject`), in words for a refusal (`what`), and the revision
    (or definition hash) read."""

    subject: str
    what: str
    revision: Revision


@dataclass(frozen=True)
class Expected:
    """What an approval described: the reads of its plan, in the order the plan made them."""

    reads: tuple[Read, ...] = ()

    @classmethod
    def of(cls, *reads: Read) -> Expected:
        return cls(tuple(reads))

    def revision(self, subject: str, default: V) -> V:
        """The revision the approval described of `subject`, or `default` (nothing expected: whatever it is now)."""
        for read in self.reads:
            if read.subject == subject and isinstance(read.revision, type(default)):
                return read.revision
        return default

    def revisions(self, default: V) -> dict[str, V]:
        """Every read's revision by subject (those of `default`'s type)."""
        return {read.subject: read.revision for read in self.reads if isinstance(read.revision, type(default))}

    def claims(self) -> list[list[Any]]:
        """The reads as the sealed 2026-07-28 state carries them."""
        return [[read.subject, read.revision] for read in self.reads]

    def change_since(self, sealed: object) -> str | None:
        """How these reads differ from the ones a question sealed (`claims`), in words; None when they agree."""
        items = sealed if isinstance(sealed, list) else []
        asked = {str(item[0]): item[1] for item in items if isinstance(item, list) and len(item) == 2}
        for read in self.reads:
            if asked.get(read.subject) != read.revision:
                return changed_since_asked(read.what, asked.get(read.subject, "none"), read.revision)
        read_now = {read.subject for read in self.reads}
        for subject, revision in asked.items():
            if subject not in read_now:
                return changed_since_asked(f"'{subject}'", revision, "none")
        return None


NOTHING = Expected()
