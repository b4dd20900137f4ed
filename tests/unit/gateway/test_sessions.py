"""list_changed to live 2025-11-25 sessions, off the change's path: every session open when a round starts is told,
the change that caused it never waits for them, one that does not take its notification holds nobody and is dropped,
changes during a round make one more round, a closed session is never told, and the gateway's end leaves no task.

Real SDK clients over streamable HTTP stand for the many sessions; hand-written listeners stand for the one that
does not read its stream, whose send never ends, which a real client cannot be made to do on cue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import GET_STREAM_KEY
from mcp.server.subscriptions import InMemorySubscriptionBus

from saip.common.http_serving import HttpServer, listening
from saip.gateway.metrics import GatewayMetrics
from saip.gateway.surface.mcp_server import LegacySessions, ListChangedNotifier
from saip.gateway.surface.registry import Changes
from tests.unit.gateway.probe import Harness, harness
from tests.waiting import eventually

SESSIONS = 50


class Recording:
    """A session that takes every notification at once and remembers it."""

    def __init__(self) -> None:
        self.exit_stack = AsyncExitStack()
        self.told: list[str] = []
        self._heard = anyio.Event()

    async def _hear(self, kind: str) -> None:
        self.told.append(kind)
        self._heard.set()
        self._heard = anyio.Event()

    async def heard(self, count: int = 1) -> None:
        """Wait until `count` notifications have come."""
        while len(self.told) < count:
            await self._heard.wait()

    async def send_tool_list_changed(self) -> None:
        await self._hear("tools")

    async def send_resource_list_changed(self) -> None:
        await self._hear("resources")

    async def send_prompt_list_changed(self) -> None:
        await self._hear("prompts")


class Stuck(Recording):
    """A session whose client stopped reading: while `stuck`, each send hangs until `release` is set (or is given
    up); before, it takes its notifications as any session does."""

    def __init__(self, *, stuck: bool = True) -> None:
        super().__init__()
        self.stuck = stuck
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def _hear(self, kind: str) -> None:
        if self.stuck:
            self.entered.set()
            await self.release.wait()
        await super()._hear(kind)


@asynccontextmanager
async def delivering(sessions: LegacySessions, *listeners: Recording) -> AsyncIterator[ListChangedNotifier]:
    """A notifier over `sessions`, with `listeners` added, its fan-out running (as the gateway runs it) until the
    block ends, and the tools changed once."""
    for listener in listeners:
        sessions.add(listener)
    notifier = ListChangedNotifier(InMemorySubscriptionBus(), sessions)
    async with anyio.create_task_group() as group:
        group.start_soon(notifier.deliver_forever)
        await notifier.changed(Changes(tools=True))
        yield notifier
        group.cancel_scope.cancel()  # as `Gateway.running` ends its group


@asynccontextmanager
async def served(h: Harness) -> AsyncIterator[str]:
    """The harness's MCP server over streamable HTTP on a free loopback port, with its fan-out running."""
    with listening("127.0.0.1", 0, "free a port") as sock:
        config = uvicorn.Config(h.server.streamable_http_app(), log_config=None, access_log=False, lifespan="on")
        server = HttpServer(config)
        async with anyio.create_task_group() as group, h.delivering():
            group.start_soon(server.serve, [sock])
            await server.listening.wait()
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
            server.should_exit = True


def standalone_streams(h: Harness) -> int:
    """How many sessions have their standalone (GET) stream open on the server. A client opens it in a task of its
    own after the handshake, and a notification sent before it is open is dropped, so the test waits for them all;
    the SDK says it nowhere but in its transports' stream table."""
    transports = h.server._session_manager._server_instances.values()
    return sum(GET_STREAM_KEY in transport._request_streams for transport in transports)


async def test_every_http_session_is_told_and_neither_the_change_nor_they_wait_for_a_stuck_one(
    tmp_path: Path,
) -> None:
    h = harness(tmp_path, send_seconds=600)  # the stuck session is released by the test, never given up
    await h.registrar.refresh()
    stuck = Stuck(stuck=False)  # it takes the round of the first refresh, then stops reading
    h.sessions.add(stuck)  # the oldest session: the first one a round tries
    told = {"count": 0}
    everyone = anyio.Event()
    opened = {"count": 0}
    all_open = anyio.Event()
    done = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told["count"] += 1
            if told["count"] == SESSIONS:
                everyone.set()

    async def hold(url: str) -> None:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=on_message) as c,
        ):
            await c.list_tools()  # a request: the session is tracked, its standalone stream open
            opened["count"] += 1
            if opened["count"] == SESSIONS:
                all_open.set()
            await done.wait()

    async with served(h) as url, anyio.create_task_group() as clients:
        for _ in range(SESSIONS):
            clients.start_soon(hold, url)
        with anyio.fail_after(120):
            await all_open.wait()
        await eventually(lambda: standalone_streams(h) == SESSIONS, within=60)
        assert len(h.sessions) == SESSIONS + 1

        stuck.stuck = True
        h.token["set"] = False
        with anyio.fail_after(30):  # bounds a hang: before the fan-out left the path, this waited on `stuck`
            status = await h.registrar.refresh()
        assert status.tools == [] and h.registry.tools() == []  # the change itself is done when refresh answers

        with anyio.fail_after(60):
            await everyone.wait()
            await stuck.entered.wait()
        assert stuck.told == ["tools", "resources"]  # the first refresh's round only: it hangs in this one
        stuck.release.set()
        with anyio.fail_after(10):
            await stuck.heard(4)
        done.set()
    assert told["count"] == SESSIONS and len(h.sessions) == 1  # each closed session was forgotten on its way out


async def test_a_session_that_does_not_take_its_notification_is_dropped_until_its_next_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sessions = LegacySessions(GatewayMetrics(), send_seconds=0.01)
    stuck, listening_one = Stuck(), Recording()
    with caplog.at_level(logging.DEBUG, logger="saip.gateway"):
        async with delivering(sessions, stuck, listening_one):
            with anyio.fail_after(10):
                await listening_one.heard()
            await eventually(lambda: stuck not in sessions)
    assert listening_one.told == ["tools"] and not stuck.told
    assert list(sessions._listeners) == [listening_one]
    assert [r.message for r in caplog.records] == [
        "a session did not take list_changed in time; forgetting it until its next request"
    ]
    sessions.add(stuck)  # its next request tracks it again
    assert stuck in sessions


async def test_changes_during_a_round_are_told_in_one_more_round_with_the_last_change() -> None:
    stuck = Stuck()
    async with delivering(LegacySessions(GatewayMetrics(), concurrency=1), stuck) as notifier:
        with anyio.fail_after(10):
            await stuck.entered.wait()
        # Three changes while the first round is held: one more round, with what changed in any of them.
        await notifier.changed(Changes(tools=True))
        await notifier.changed(Changes(prompts=True))
        await notifier.changed(Changes(tools=True))
        stuck.release.set()
        with anyio.fail_after(10):
            await stuck.heard(3)
        # A change after the rounds end is a round of its own: had the three made more rounds, it would come later.
        await notifier.changed(Changes(resources=True))
        with anyio.fail_after(10):
            await stuck.heard(4)
    assert stuck.told == ["tools", "tools", "prompts", "resources"]


async def test_a_session_that_closes_during_a_round_is_not_told(caplog: pytest.LogCaptureFixture) -> None:
    sessions = LegacySessions(GatewayMetrics(), concurrency=1)
    first, closing = Stuck(), Recording()
    with caplog.at_level(logging.DEBUG, logger="saip.gateway"):
        async with delivering(sessions, first, closing):
            with anyio.fail_after(10):
                await first.entered.wait()
            await closing.exit_stack.aclose()  # its connection ends while the round still holds it in its list
            first.release.set()
            with anyio.fail_after(10):
                await first.heard()
    assert closing.told == [] and closing not in sessions and first.told == ["tools"]
    assert caplog.records == []


async def test_a_closed_sdk_session_is_forgotten_and_a_change_after_logs_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness(tmp_path)
    await h.registrar.refresh()
    async with h.delivering():
        async with Client(h.server, mode="legacy") as client:
            await client.list_tools()
            assert len(h.sessions) == 1
        assert len(h.sessions) == 0
        witness = Recording()  # a session still open: once it is told, the round is over
        h.sessions.add(witness)
        h.token["set"] = False
        with caplog.at_level(logging.WARNING):
            await h.registrar.refresh()
            with anyio.fail_after(10):
                await witness.heard()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_the_end_of_the_gateway_stops_a_round_under_way_and_leaves_no_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sessions = LegacySessions(GatewayMetrics())
    stuck = [Stuck() for _ in range(3)]
    before = asyncio.all_tasks()
    with caplog.at_level(logging.DEBUG):
        async with delivering(sessions, *stuck):
            with anyio.fail_after(10):
                for session in stuck:
                    await session.entered.wait()
    assert asyncio.all_tasks() == before
    assert caplog.records == [] and len(sessions) == 3  # ended, not given up: nothing dropped, nothing said


async def test_every_session_hears_of_the_tools_before_any_hears_of_the_resources() -> None:
    sessions = LegacySessions(GatewayMetrics(), concurrency=1)
    heard: list[tuple[int, str]] = []

    class Numbered(Recording):
        def __init__(self, number: int) -> None:
            super().__init__()
            self.number = number

        async def _hear(self, kind: str) -> None:
            heard.append((self.number, kind))

    for number in range(3):
        sessions.add(Numbered(number))
    await sessions.notify(Changes(tools=True, resources=True, prompts=True))
    assert heard == [(n, kind) for kind in ("tools", "resources", "prompts") for n in range(3)]
