"""In-memory fakes of the shipyard's ports (it holds no tests itself)."""

from __future__ import annotations

from dataclasses import dataclass, field

from saip.shipyard.ports import Completed


@dataclass
class FakeCommands:
    """The host's programs as a table: which exist, and what each command line answers."""

    programs: set[str] = field(default_factory=set)
    answers: dict[tuple[str, ...], Completed] = field(default_factory=dict)
    ran: list[list[str]] = field(default_factory=list)

    def which(self, program: str) -> str | None:
        return f"/usr/bin/{program}" if program in self.programs else None

    async def run(self, argv: list[str], *, within: float) -> Completed:
        self.ran.append(argv)
        return self.answers.get(tuple(argv), Completed(1, f"{argv[0]}: no answer set for {argv}"))
