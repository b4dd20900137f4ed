"""Running a service until SIGTERM or SIGINT, then letting it drain."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any


class Shutdown:
    """Set by SIGTERM or SIGINT; a service's main coroutine waits on it, then closes what it opened."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.event.set)

    async def wait(self) -> None:
        await self.event.wait()


def run(main: Callable[[Shutdown], Coroutine[Any, Any, None]]) -> None:
    async def _main() -> None:
        shutdown = Shutdown()
        shutdown.install()
        await main(shutdown)

    asyncio.run(_main())
