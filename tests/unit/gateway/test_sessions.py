"""list_changed to live 2025-11-25 sessions: a session that went away between two requests is forgotten, and the
others are still told (a change must never fail because one client left)."""

from __future__ import annotations

from typing import Any, cast

import anyio

from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.mcp_server import LegacySessions
from saip.gateway.surface.registry import Changes


class Gone:
    """What a session whose connection closed does when written to."""

    async def send_tool_list_changed(self) -> None:
        raise anyio.ClosedResourceError


class Listening:
    def __init__(self) -> None:
        self.told: list[str] = []

    async def send_tool_list_changed(self) -> None:
        self.told.append("tools")

    async def send_prompt_list_changed(self) -> None:
        self.told.append("prompts")


async def test_a_session_that_went_away_is_forgotten_and_the_others_are_told() -> None:
    sessions = LegacySessions(GatewayMetrics())
    listening = Listening()
    # The SDK's sessions are tracked from inside a request; these stand in for a closed one and a live one.
    sessions._sessions.update({1: cast(Any, Gone()), 2: cast(Any, listening)})

    await sessions.notify(Changes(tools=True, prompts=True))

    assert len(sessions) == 1
    assert listening.told == ["tools", "prompts"]
