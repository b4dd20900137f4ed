"""What a service's traces publish, caught without NATS: the fake connection and the settings that the tracing tests,
the trace store's tests and the tracing benchmark open `saip.common.tracing.traced` with."""

from __future__ import annotations

from typing import Any, ClassVar

from saip.common import tracing
from saip.common.settings import SaipSettings


class ProbeSettings(SaipSettings):
    """A service's settings under the name `probe`."""

    service: ClassVar[str] = "probe"


class Published:
    """The one thing tracing needs of a NATS connection: a core publish, kept."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes) -> None:
        self.messages.append((subject, payload))

    @property
    def batches(self) -> list[bytes]:
        return [payload for _, payload in self.messages]

    def rows(self) -> list[list[Any]]:
        """Every span row published, in order."""
        return [row for payload in self.batches for row in tracing.decode(payload)[1]]
