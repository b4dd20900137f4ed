"""Shared by the integration tests that drive /mcp with the SDK client (it holds no tests itself): a person who
accepts every question, and a 2026-07-28 call and retry as the SDK hands them to a handler."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.client import ClientRequestContext

from saip.gateway.surface.approval import Answer
from tests.results import envelope as envelope  # for the modules that take it from here with Person


class Person:
    """Accepts every question and keeps its text."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": ["run"]})


class Painter(Person):
    """Answers an upstream's own questions (relayed by saip: `Upstream server '<id>' asks ...`) with the colour green,
    approves saip's own, and keeps every question's text."""

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if "asks (through" not in params.message:
            return await super().__call__(context, params)
        self.questions.append(params.message)
        return types.ElicitResult(action="accept", content={"colour": "green"})


class Roundtrip:
    """A 2026-07-28 call as the SDK hands it to a handler: no back channel; a first call carries no state or answer."""

    roundtrip = True
    reports_progress = False

    def __init__(self, state: str | None = None, answer: Answer | None = None) -> None:
        self.state = state
        self.answer = answer

    async def elicit(self, message: str, schema: dict[str, Any]) -> Answer:
        raise AssertionError("a 2026-07-28 caller is never asked on a back channel")

    async def progress(self, done: float, total: float, message: str) -> None:
        return None


class Retry(Roundtrip):
    """A 2026-07-28 retry as the SDK hands it over once its seal verified: the (unsealed) state and the answer."""

    def __init__(self, state: str, answer: Answer) -> None:
        super().__init__(state, answer)
